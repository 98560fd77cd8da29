//! What travels over RabbitMQ: the versioned job envelope (engine → worker), the engine
//! messages (API/worker → engine), and the queue topology every binary declares idempotently.

pub mod envelope;
pub mod episodes;
pub mod nodes;
pub mod shared;
pub mod topology;
pub mod trace;

pub use envelope::{
    epoch_us, EngineMessage, ErrorInfo, Hops, Job, StepDelta, StepOutcome, JOB_VERSION,
};
pub use episodes::IngestMessage;
pub use shared::SharedBroker;
pub use topology::{Broker, BrokerError, OperationType, QueueType, RetryPolicy, DELTAS_EXCHANGE};
