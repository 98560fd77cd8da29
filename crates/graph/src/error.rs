//! Graph errors, classified for the callers that must act on them.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A concurrent transaction won; the unit of work may be retried as a whole.
    #[error("transient graph error: {0}")]
    Transient(String),
    /// A uniqueness constraint rejected the write (an id already taken).
    #[error("constraint violated: {0}")]
    Constraint(String),
    /// The server could not be reached or the connection broke.
    #[error("graph unavailable: {0}")]
    Unavailable(String),
    /// A row did not have the expected shape.
    #[error("cannot decode graph row: {0}")]
    Decode(String),
    /// A run was to be created from a cached plan whose Process changed since: nothing was
    /// written; re-read the plan and retry.
    #[error("the process changed since its plan was cached")]
    StalePlan,
    /// A read that should show one commit showed two (a lock not taken where it must be): a
    /// defect, reported rather than shown, and not retried.
    #[error("inconsistent read: {0}")]
    Torn(String),
    /// Anything else the server refused.
    #[error("graph query failed: {0}")]
    Query(String),
}

impl Error {
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Transient(_) | Error::StalePlan)
    }

    pub(crate) fn from_driver(e: neo4rs::Error) -> Self {
        match &e {
            neo4rs::Error::Neo4j(n) => {
                let code = n.code();
                // A node delete that meets an edge committed after our reference check ("still
                // has relationships"): retry the unit, whose fresh reference check then answers
                // with the rule's 409. Likewise a node a statement matched that a concurrent
                // transaction deleted (EntityNotFound): the retry re-reads and answers with the
                // rule.
                if n.message().contains("still has relationships")
                    || code.contains("EntityNotFound")
                {
                    return Error::Transient(format!("{code}: {}", n.message()));
                }
                // A server shutting down drops its sessions' credentials: the graph is going away.
                if code.contains("Security.Unauthorized") {
                    return Error::Unavailable(format!("{code}: {}", n.message()));
                }
                if code.contains("TransientError") {
                    Error::Transient(format!("{code}: {}", n.message()))
                } else if code.contains("ConstraintValidationFailed") {
                    Error::Constraint(n.message().to_owned())
                } else {
                    Error::Query(format!("{code}: {}", n.message()))
                }
            }
            neo4rs::Error::IOError { .. }
            | neo4rs::Error::ConnectionError
            | neo4rs::Error::ConnectionTimedOut
            | neo4rs::Error::AuthenticationError(_)
            | neo4rs::Error::ServerUnavailableError(_) => Error::Unavailable(e.to_string()),
            neo4rs::Error::DeserializationError(_) | neo4rs::Error::ConversionError => {
                Error::Decode(e.to_string())
            }
            _ => Error::Query(e.to_string()),
        }
    }
}
