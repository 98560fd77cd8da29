//! SEC-7: a model key is tried with one small request before it is kept. `POST /v1/secrets`
//! with `checkWith: {serviceId, api}` asks the model Service's provider for its model list
//! with the key (the same authentication the `llm_call` executor sends); a refusal, an
//! unreachable host or a timeout answers 422 and nothing is saved. The key is never in an
//! answer, a log line or an error: only the Service's host and the provider's status are.

use std::time::Duration;

use aiden_domain::provider_wire::{anthropic_url, ANTHROPIC_VERSION};
use aiden_domain::{service::ServiceType, user::Caller, Error as Rule, Id};
use reqwest::header::HeaderValue;
use serde::Deserialize;

use crate::{App, Result};

/// How long the provider has to answer the check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Which wire the key is for (the model Tool's `operation.api`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyApi {
    #[default]
    Openai,
    Anthropic,
}

/// `checkWith` of `POST /v1/secrets`: the model Service to try the key on.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyCheck {
    pub service_id: Id,
    #[serde(default)]
    pub api: KeyApi,
}

fn refused(message: String) -> crate::Error {
    Rule::invariant("SEC-7", "/value", message).into()
}

/// The endpoint's scheme, host and port: what a message may name.
fn host_of(endpoint: &str) -> String {
    reqwest::Url::parse(endpoint)
        .ok()
        .and_then(|u| {
            u.host_str().map(|h| {
                format!(
                    "{h}{}",
                    u.port().map(|p| format!(":{p}")).unwrap_or_default()
                )
            })
        })
        .unwrap_or_else(|| "the provider".into())
}

impl App {
    /// SEC-7: `Ok` when the provider of `check.service_id` accepted `key` in one request.
    pub(crate) async fn try_model_key(
        &self,
        caller: &Caller,
        check: &KeyCheck,
        key: &str,
    ) -> Result<()> {
        // A reference in the body, not the route's resource: a Service the caller cannot see
        // is a refusal of the request (422), not a 404 of `/v1/secrets`.
        let service = match self.get_service(caller, check.service_id.as_str()).await {
            Err(crate::Error::Domain(Rule::NotFound)) => {
                return Err(Rule::invariant(
                    "SEC-7",
                    "/checkWith/serviceId",
                    "no model Service with this id that you can use",
                )
                .into())
            }
            other => other?,
        };
        if service.structure.service_type != ServiceType::LlmProvider {
            return Err(Rule::invariant(
                "SEC-7",
                "/checkWith/serviceId",
                "a key can be tried only on a model Service (type llm_provider)",
            )
            .into());
        }
        let Some(endpoint) = service.endpoint.as_deref().map(|e| e.trim_end_matches('/')) else {
            return Err(Rule::invariant(
                "SEC-7",
                "/checkWith/serviceId",
                "the model Service has no endpoint to try the key on",
            )
            .into());
        };
        let host = host_of(endpoint);
        let request = match check.api {
            KeyApi::Openai => self.http.get(format!("{endpoint}/models")).bearer_auth(key),
            KeyApi::Anthropic => {
                let mut value = HeaderValue::from_str(key)
                    .map_err(|_| refused("the key has characters no API key has".into()))?;
                value.set_sensitive(true);
                self.http
                    .get(anthropic_url(endpoint, "models"))
                    .header("x-api-key", value)
                    .header("anthropic-version", ANTHROPIC_VERSION)
            }
        };
        let outcome = request.timeout(CHECK_TIMEOUT).send().await;
        let verdict = match outcome {
            Err(e) if e.is_timeout() => Err(format!(
                "the model provider at {host} did not answer within {} s; the key was not saved",
                CHECK_TIMEOUT.as_secs()
            )),
            Err(_) => Err(format!(
                "the model provider at {host} could not be reached; the key was not saved"
            )),
            Ok(r) if matches!(r.status().as_u16(), 401 | 403) => Err(format!(
                "the model provider at {host} refused the key ({}): check that it is the right, \
                 active key; it was not saved",
                r.status()
            )),
            Ok(r) if !r.status().is_success() => Err(format!(
                "the model provider at {host} answered {} when asked for its models with the \
                 key; it was not saved",
                r.status()
            )),
            Ok(_) => Ok(()),
        };
        match verdict {
            Ok(()) => {
                tracing::info!(service = %check.service_id, "model key accepted by its provider");
                Ok(())
            }
            Err(message) => {
                tracing::info!(service = %check.service_id, %message, "model key check failed");
                Err(refused(message))
            }
        }
    }
}
