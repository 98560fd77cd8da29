//! What travels over RabbitMQ: the versioned job envelope (engine → worker), the engine
//! messages (API/worker → engine), and the queue topology every binary declares idempotently.

pub mod envelope;
pub mod topology;

pub use envelope::{EngineMessage, ErrorInfo, Job, StepOutcome, JOB_VERSION};
pub use topology::{Broker, RetryPolicy, OPERATION_TYPES};
