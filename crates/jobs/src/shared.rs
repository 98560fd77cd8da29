//! A broker handle for request paths (the API): connects lazily and reconnects after the
//! broker restarts, so one lost connection never silences the API for good.

use tokio::sync::RwLock;

use crate::topology::{Broker, BrokerError};
use crate::EngineMessage;

pub struct SharedBroker {
    uri: String,
    current: RwLock<Option<Broker>>,
}

impl SharedBroker {
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            current: RwLock::new(None),
        }
    }

    async fn broker(&self) -> Result<Broker, BrokerError> {
        if let Some(b) = self
            .current
            .read()
            .await
            .as_ref()
            .filter(|b| b.is_connected())
        {
            return Ok(b.clone());
        }
        let mut slot = self.current.write().await;
        if let Some(b) = slot.as_ref().filter(|b| b.is_connected()) {
            return Ok(b.clone());
        }
        let fresh = Broker::connect(&self.uri).await?;
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Broadcasts that the catalog (Tools, Services, Secrets) changed, reconnecting once.
    pub async fn broadcast_catalog_changed(&self) -> Result<(), BrokerError> {
        let mut last = None;
        for _ in 0..2 {
            let broker = self.broker().await?;
            match broker.broadcast_catalog_changed().await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    *self.current.write().await = None;
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or(BrokerError::Nacked))
    }

    /// Publishes to the engine, reconnecting once if the connection went away. With
    /// `confirmed`, waits for the broker's confirm.
    pub async fn publish_engine(
        &self,
        message: &EngineMessage,
        confirmed: bool,
    ) -> Result<(), BrokerError> {
        let mut last = None;
        for _ in 0..2 {
            let broker = self.broker().await?;
            let sent = if confirmed {
                broker.publish_engine(message).await
            } else {
                broker.publish_engine_unconfirmed(message).await
            };
            match sent {
                Ok(()) => return Ok(()),
                Err(e) => {
                    *self.current.write().await = None;
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or(BrokerError::Nacked))
    }
}
