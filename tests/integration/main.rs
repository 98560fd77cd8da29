//! Integration tests against the real Bolt server and RabbitMQ. Each invariant ID is named in
//! the test that covers it.

mod accounts;
mod agents;
mod audit;
mod catalog;
mod concurrency;
mod connections;
mod conversations;
mod entities;
mod http;
mod identity;
mod mcp;
mod measurements;
mod memories;
mod processes;
mod providers;
mod queries;
mod queues;
mod reads;
mod recall;
mod runs;
mod secrets;
mod tools;
mod transactions;
mod users;
