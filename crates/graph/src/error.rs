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

/// How an `Unavailable` from refused credentials begins ([`Error::is_refused_credentials`]).
const REFUSED_CREDENTIALS: &str = "credentials refused";

impl Error {
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Transient(_) | Error::StalePlan)
    }

    /// An `Unavailable` that is the server refusing our credentials (or a server shutting
    /// down, which drops them): waiting for the server to start would not change it, and
    /// retrying wrong credentials gets them rate-limited. The driver's kind is kept only in
    /// the text.
    pub fn is_refused_credentials(&self) -> bool {
        matches!(self, Error::Unavailable(m)
            if m.starts_with(REFUSED_CREDENTIALS) || m.contains("Security.Unauthorized"))
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
            neo4rs::Error::AuthenticationError(m) => {
                Error::Unavailable(format!("{REFUSED_CREDENTIALS}: {m}"))
            }
            neo4rs::Error::IOError { .. }
            | neo4rs::Error::ConnectionError
            | neo4rs::Error::ConnectionTimedOut
            | neo4rs::Error::ServerUnavailableError(_)
            | neo4rs::Error::CommitOutcomeUnknown(_) => Error::Unavailable(e.to_string()),
            neo4rs::Error::DeserializationError(_) | neo4rs::Error::ConversionError => {
                Error::Decode(e.to_string())
            }
            _ => Error::Query(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_credentials_are_told_apart_from_a_server_that_does_not_answer() {
        let refused = Error::from_driver(neo4rs::Error::AuthenticationError("bad".into()));
        assert!(refused.is_refused_credentials(), "{refused}");
        let down = Error::from_driver(neo4rs::Error::ConnectionTimedOut);
        assert!(matches!(down, Error::Unavailable(_)) && !down.is_refused_credentials());
    }
}
