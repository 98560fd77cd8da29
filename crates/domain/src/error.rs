//! Domain errors. Each maps to one HTTP status in the API's single exhaustive match.

use serde::Serialize;

/// One broken rule: the invariant ID, where in the input, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Violation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invariant: Option<&'static str>,
    pub path: String,
    pub message: String,
}

impl Violation {
    pub fn rule(
        invariant: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            invariant: Some(invariant),
            path: path.into(),
            message: message.into(),
        }
    }

    pub fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            invariant: None,
            path: path.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// Malformed input: wrong types, unknown enum values, missing fields (400).
    #[error("invalid request: {}", summary(.0))]
    Validation(Vec<Violation>),
    /// Well-formed but breaks a rule of `invariants.md` (422).
    #[error("invariant violated: {}", summary(.0))]
    Invariant(Vec<Violation>),
    /// Absent or invisible to the caller (404). Never says which.
    #[error("not found")]
    NotFound,
    /// Visible but not the caller's to change, or an admin-only route (403).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Referenced, taken, or lost to a concurrent change (409).
    #[error("conflict: {message}")]
    Conflict {
        message: String,
        details: Vec<Violation>,
    },
    /// The operation never applies to this resource (405).
    #[error("not allowed: {message}")]
    NotAllowed {
        message: String,
        details: Vec<Violation>,
    },
    /// A quota is spent (429 `QUOTA_EXCEEDED` with `Retry-After`).
    #[error("quota exceeded: {message}")]
    Quota {
        message: String,
        retry_after_secs: u64,
        details: Vec<Violation>,
    },
    /// A money budget is spent (429 `BUDGET_EXCEEDED` with `Retry-After`: when it renews).
    #[error("budget exceeded: {message}")]
    Budget {
        message: String,
        retry_after_secs: u64,
        details: Vec<Violation>,
    },
}

impl Error {
    pub fn validation(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Validation(vec![Violation::field(path, message)])
    }

    pub fn invariant(
        id: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::Invariant(vec![Violation::rule(id, path, message)])
    }

    pub fn referenced(id: &'static str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::Conflict {
            details: vec![Violation::rule(id, "", message.clone())],
            message,
        }
    }

    /// 405: the operation never applies; `id` names the rule that forbids it, if one does.
    pub fn not_allowed(id: Option<&'static str>, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::NotAllowed {
            details: id
                .map(|id| vec![Violation::rule(id, "", message.clone())])
                .unwrap_or_default(),
            message,
        }
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict {
            message: message.into(),
            details: Vec::new(),
        }
    }

    pub fn details(&self) -> &[Violation] {
        match self {
            Self::Validation(v)
            | Self::Invariant(v)
            | Self::Conflict { details: v, .. }
            | Self::NotAllowed { details: v, .. }
            | Self::Quota { details: v, .. }
            | Self::Budget { details: v, .. } => v,
            Self::NotFound | Self::Forbidden(_) => &[],
        }
    }
}

fn summary(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| match v.invariant {
            Some(id) => format!("{id} at '{}': {}", v.path, v.message),
            None => format!("'{}': {}", v.path, v.message),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Collects violations and turns them into one error, so a request learns every problem at once.
#[derive(Debug, Default)]
pub struct Violations(Vec<Violation>);

impl Violations {
    pub fn push(&mut self, v: Violation) {
        self.0.push(v);
    }

    pub fn rule(&mut self, id: &'static str, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Violation::rule(id, path, message));
    }

    pub fn extend(&mut self, other: impl IntoIterator<Item = Violation>) {
        self.0.extend(other);
    }

    pub fn into_vec(self) -> Vec<Violation> {
        self.0
    }

    pub fn into_result(self) -> Result<(), Error> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Error::Invariant(self.0))
        }
    }
}
