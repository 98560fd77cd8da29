//! Job envelopes and the RabbitMQ topology.
