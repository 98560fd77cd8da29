//! Service errors: a domain decision, or the graph failing under it.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Domain(#[from] aiden_domain::Error),
    #[error(transparent)]
    Graph(aiden_graph::Error),
    /// A concurrent writer changed the snapshot between read and write; the unit is retried.
    #[error("lost a race with a concurrent change")]
    LostRace,
    /// The secret vault failed (never carries the secret).
    #[error("vault: {0}")]
    Vault(&'static str),
    /// A backing service (the broker) could not take a message that must not be lost (503).
    #[error("unavailable: {0}")]
    Unavailable(&'static str),
    /// New work refused while the run queues are past their bound (503 with `Retry-After`).
    #[error("overloaded: {0}")]
    Overloaded(&'static str),
    /// A bug of ours (e.g. a stored record that does not fit its documented view): 500.
    #[error("internal: {0}")]
    Internal(String),
}

impl From<aiden_vault::VaultError> for Error {
    fn from(e: aiden_vault::VaultError) -> Self {
        Error::Vault(e.0)
    }
}

impl From<aiden_graph::Error> for Error {
    fn from(e: aiden_graph::Error) -> Self {
        match e {
            // A uniqueness constraint (an id, or a revision claim) means a concurrent transaction
            // won: retry the unit, whose fresh snapshot then answers (409 for a taken id).
            aiden_graph::Error::Constraint(_) => Error::LostRace,
            other => Error::Graph(other),
        }
    }
}

impl Error {
    /// Why the graph could not be reached, when that is what failed (a 503, not a 500).
    pub fn graph_unavailable(&self) -> Option<&str> {
        match self {
            Error::Graph(aiden_graph::Error::Unavailable(cause)) => Some(cause),
            _ => None,
        }
    }

    pub(crate) fn is_retryable(&self) -> bool {
        matches!(self, Error::LostRace) || matches!(self, Error::Graph(g) if g.is_transient())
    }
}
