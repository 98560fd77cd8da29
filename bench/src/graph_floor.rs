//! The graph server's floor: what the cheapest durable writes cost it, batched as the
//! engine batches a pass (one UNWIND statement of `--batch` rows, then COMMIT), on a warm JVM.
//! It answers "how much graph CPU per step is left once everything of ours is gone": each shape
//! prints the graph server's CPU (and its JIT's share) per row, next to the wall time per
//! transaction. scripts/bench-graph-floor.sh runs it on a new, empty database of its own.
//!
//! Shapes, each a part of what one step writes today (run/apply_batch.cypher):
//! - `round_trip`: `RETURN 1` and COMMIT, no rows: a transaction's fixed cost (BEGIN rides
//!   with the statement, COMMIT is the second round trip; vendor/README.md);
//! - `create`: a node with five properties (an audit record, an event chunk);
//! - `update`: properties set on a node found by its indexed id (a StepRun, a Run);
//! - `create_linked`: a node created under a node found by its indexed id (audit, chunk);
//! - `step`: one `update` and one `create_linked` per row, in one statement: about the least a
//!   durable step result can cost.

mod cpu;

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use neo4rs::{query, BoltList, BoltMap, BoltType};
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// Rows per statement (the engine's passes carry 8–40 rows under `chain3`'s load).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Measured transactions per shape.
    #[arg(long, default_value_t = 1_500)]
    transactions: usize,
    /// Unmeasured transactions per shape before it (the JIT compiles the path meanwhile).
    #[arg(long, default_value_t = 3_000)]
    warmup: usize,
    /// Shapes to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "round_trip,create,update,create_linked,step"
    )]
    shapes: Vec<String>,
}

const ROUND_TRIP: &str = "RETURN 1 AS n";
const CREATE: &str = "UNWIND $rows AS r
CREATE (:FloorRecord {id: r.id, runId: r.parent, status: r.status, at: r.at, payload: r.payload})";
const UPDATE: &str = "UNWIND $rows AS r
MATCH (n:FloorTarget {id: r.parent})
SET n.status = r.status, n.at = r.at, n.attempts = n.attempts + 1";
const CREATE_LINKED: &str = "UNWIND $rows AS r
MATCH (n:FloorTarget {id: r.parent})
CREATE (n)-[:HAS_RECORD]->(:FloorRecord {id: r.id, runId: r.parent, status: r.status, at: r.at,
                                        payload: r.payload})";
const STEP: &str = "UNWIND $rows AS r
MATCH (n:FloorTarget {id: r.parent})
SET n.status = r.status, n.at = r.at, n.attempts = n.attempts + 1
CREATE (n)-[:HAS_RECORD]->(:FloorRecord {id: r.id, runId: r.parent, status: r.status, at: r.at,
                                        payload: r.payload})";

/// Nodes the `update` shapes find by id (a pass touches runs spread over this many).
const TARGETS: usize = 4_096;

fn statement(shape: &str) -> anyhow::Result<&'static str> {
    Ok(match shape {
        "round_trip" => ROUND_TRIP,
        "create" => CREATE,
        "update" => UPDATE,
        "create_linked" => CREATE_LINKED,
        "step" => STEP,
        other => anyhow::bail!("unknown shape `{other}`"),
    })
}

fn rows(batch: usize, serial: &mut usize) -> BoltType {
    let mut list = BoltList::default();
    for _ in 0..batch {
        *serial += 1;
        let mut row = BoltMap::default();
        row.put("id".into(), format!("rec-{serial}").into());
        row.put("parent".into(), format!("t-{}", *serial % TARGETS).into());
        row.put("status".into(), "succeeded".into());
        row.put("at".into(), (*serial as i64).into());
        row.put("payload".into(), r#"{"ok":true,"echo":"hello"}"#.into());
        list.push(BoltType::Map(row));
    }
    BoltType::List(list)
}

async fn transactions(
    graph: &aiden_graph::Graph,
    text: &str,
    count: usize,
    batch: usize,
    serial: &mut usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut took = Vec::with_capacity(count);
    for _ in 0..count {
        let clock = Instant::now();
        let mut tx = graph.begin().await?;
        let statement = if text == ROUND_TRIP {
            query(text)
        } else {
            query(text).param("rows", rows(batch, serial))
        };
        tx.run(statement).await?;
        tx.commit().await?;
        took.push(clock.elapsed());
    }
    took.sort();
    Ok(took)
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 100_000.0).round() / 100.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
    let graph = aiden_graph::Graph::connect(&aiden_graph::Settings {
        uri: env("AIDEN_NEO4J_URI", "bolt://127.0.0.1:7687"),
        user: env("AIDEN_NEO4J_USER", "neo4j"),
        password: env("AIDEN_NEO4J_PASSWORD", ""),
        database: env("AIDEN_NEO4J_DATABASE", "neo4j"),
        max_connections: 4,
        timeout: Duration::from_secs(30),
    })
    .await
    .context("connecting to the graph")?;
    for schema in [
        "CREATE CONSTRAINT floor_target_id IF NOT EXISTS FOR (n:FloorTarget) REQUIRE n.id IS UNIQUE",
        "CREATE CONSTRAINT floor_record_id IF NOT EXISTS FOR (n:FloorRecord) REQUIRE n.id IS UNIQUE",
    ] {
        graph.run_autocommit(query(schema)).await?;
    }
    let targets: Vec<String> = (0..TARGETS).map(|i| format!("t-{i}")).collect();
    graph
        .run_autocommit(
            query("UNWIND $ids AS id CREATE (:FloorTarget {id: id, status: 'new', attempts: 0})")
                .param("ids", targets),
        )
        .await?;
    let mut serial = 0;
    for shape in &args.shapes {
        let text = statement(shape)?;
        transactions(&graph, text, args.warmup, args.batch, &mut serial).await?;
        let cpu_before = cpu::Sample::now();
        let clock = Instant::now();
        let took = transactions(&graph, text, args.transactions, args.batch, &mut serial).await?;
        let wall = clock.elapsed();
        let cpu_s = cpu::Sample::now().since(&cpu_before);
        let batch = if text == ROUND_TRIP { 1 } else { args.batch };
        let rows = (args.transactions * batch) as f64;
        let per_row_ms = |group: &str| {
            let s = cpu_s[group].as_f64().unwrap_or(0.0);
            (s * 1000.0 / rows * 1000.0).round() / 1000.0
        };
        println!(
            "{}",
            json!({
                "system": "aiden", "scenario": format!("graph_floor_{shape}"),
                "batch": batch, "transactions": args.transactions,
                "rows_per_s": (rows / wall.as_secs_f64()).round(),
                "tx_p50_ms": ms(took[took.len() / 2]),
                "tx_p99_ms": ms(took[took.len() * 99 / 100]),
                "graph_cpu_ms_per_row": per_row_ms("graph"),
                "graph_jit_cpu_ms_per_row": per_row_ms("graph_jit"),
                "client_cpu_ms_per_row": per_row_ms("client"),
                "cpu_s": cpu_s,
            })
        );
    }
    Ok(())
}
