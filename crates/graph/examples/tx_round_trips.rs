//! Latency of one small explicit transaction (the shape of an engine pass: one statement that
//! returns rows, then COMMIT), against the graph in `.stack/env`. Prints p50 and p90 in µs.
//!   . .stack/env && cargo run --release -p aiden-graph --example tx_round_trips

use std::time::{Duration, Instant};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
    let graph = aiden_graph::Graph::connect(&aiden_graph::Settings {
        uri: env("AIDEN_NEO4J_URI", "bolt://127.0.0.1:7687"),
        user: env("AIDEN_NEO4J_USER", "root"),
        password: env("AIDEN_NEO4J_PASSWORD", ""),
        database: env("AIDEN_NEO4J_DATABASE", "neo4j"),
        max_connections: 4,
        timeout: Duration::from_secs(10),
    })
    .await?;
    #[derive(serde::Deserialize)]
    struct Row {
        #[allow(dead_code)]
        n: i64,
    }
    let mut times = Vec::new();
    for i in 0..3000 {
        let clock = Instant::now();
        let mut tx = graph.begin().await?;
        let rows: Vec<Row> = tx.rows(neo4rs::query("RETURN 1 AS n")).await?;
        assert_eq!(rows.len(), 1);
        tx.commit().await?;
        if i >= 1000 {
            times.push(clock.elapsed().as_micros());
        }
    }
    times.sort_unstable();
    println!(
        "tx(RETURN 1 AS n) + COMMIT: p50 {} µs, p90 {} µs",
        times[times.len() / 2],
        times[times.len() * 9 / 10]
    );
    Ok(())
}
