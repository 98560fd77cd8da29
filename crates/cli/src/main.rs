//! `aiden`: one binary for the API server, schema migration, loading definitions and auditing.
//! Config is read once here (defaults → `AIDEN_*` env → flags) and passed down.

mod apply;
mod config;
mod telemetry;
mod warm;

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::config::{GraphArgs, ServeArgs, WorkerArgs};

/// mimalloc rather than the system's allocator: decoding graph rows and encoding views and jobs
/// allocate many small values, and glibc's malloc and free took a fifth of the serve's CPU on a
/// working-memory read (docs/dev/performance.md, tenth round).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "aiden",
    version,
    about = "Graph-native Process / Tool / Service runtime"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// HTTP API and the run engine.
    Serve(ServeArgs),
    /// A worker pool for one operation type.
    Worker(WorkerArgs),
    /// Apply the graph schema (constraints, indexes); idempotent.
    Migrate(GraphArgs),
    /// Create or update definitions from YAML/JSON files or folders through the HTTP API.
    Apply(apply::ApplyArgs),
    /// Read-only audit of the graph against the (audit) invariants; exit 1 on any violation.
    Check(GraphArgs),
    /// Print the HTTP API's OpenAPI 3.1 document (the one `GET /openapi.json` serves).
    Openapi,
    /// Print the operation types, one per line: one job queue and one worker pool each.
    OperationTypes,
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let cli = Cli::parse();
    let telemetry = match &cli.command {
        Command::Serve(_) => telemetry::init("aiden-serve", Vec::new()),
        Command::Worker(args) => telemetry::init(
            "aiden-worker",
            vec![opentelemetry::KeyValue::new(
                "aiden.worker.type",
                args.operation_type.clone(),
            )],
        ),
        _ => telemetry::init("aiden", Vec::new()),
    };
    let result = match cli.command {
        Command::Serve(args) => serve(args).await.map(|_| ExitCode::SUCCESS),
        Command::Worker(args) => worker(args).await.map(|_| ExitCode::SUCCESS),
        Command::Migrate(args) => migrate(args).await.map(|_| ExitCode::SUCCESS),
        Command::Apply(args) => apply::run(args).await,
        Command::Check(args) => check(args).await,
        Command::Openapi => {
            println!("{:#}", aiden_api::openapi_document());
            Ok(ExitCode::SUCCESS)
        }
        Command::OperationTypes => {
            println!("{}", aiden_jobs::OperationType::names().join("\n"));
            Ok(ExitCode::SUCCESS)
        }
    };
    telemetry.shutdown();
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    };
    // Exits here, inside the runtime: lapin's IO threads use this runtime's reactor, and would
    // report its shutdown as connection errors while the process ends. (Every command ends in
    // ExitCode::SUCCESS or ExitCode::FAILURE.)
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 })
}

async fn serve(mut args: ServeArgs) -> anyhow::Result<()> {
    // A cluster's nodes (AIDEN_AMQP_URIS), else the one broker.
    args.amqp_uri = aiden_jobs::nodes::from_env(&args.amqp_uri);
    // AGT-14: a price table that does not parse must stop the start, not price nothing.
    aiden_domain::execution::cost::PriceTable::from_env().map_err(anyhow::Error::msg)?;
    let graph = args.graph.connect().await?;
    let applied = aiden_graph::migrate::run(&graph)
        .await
        .context("applying the schema")?;
    if !applied.is_empty() {
        tracing::info!(?applied, "schema migrations applied");
    }
    let vault = vault(args.master_key.as_deref())?;
    let notifier = aiden_engine::Notifier::default();
    // Streamed model text for this instance's live SSE streams.
    tokio::spawn(aiden_engine::relay_deltas(
        args.amqp_uri.clone(),
        notifier.clone(),
    ));
    // The engine (the one writer of runs) and its lease use Bolt connections of their own: a
    // burst of API requests holding every shared connection must not stall a pass or a renewal.
    let engine_graph = args.graph.connect_pool(ENGINE_CONNECTIONS).await?;
    let engine = aiden_engine::Engine::new(
        engine_graph.clone(),
        args.amqp_uri.clone(),
        notifier.clone(),
    );
    let admission = aiden_service::Admission::new(args.admit_queue_bound);
    let app = aiden_service::App::new(graph.clone(), vault)
        .with_broker(&args.amqp_uri)
        .with_auth_policy(&args.auth.policy())
        .with_engine_door(engine.door())
        .with_outbox_wake(notifier.content_wake())
        .with_admission(admission.clone())
        .with_recall_settings(args.recall.settings())
        .with_neo4j_browser(args.neo4j_browser());
    tokio::spawn(watch_queues(args.amqp_uri.clone(), admission));
    // The outbox relay: content to ingest reaches RabbitMQ.
    tokio::spawn(
        aiden_service::outbox::Relay::new(graph.clone(), args.amqp_uri.clone(), app.outbox_wake())
            .run(),
    );
    // Memory upkeep: compression, introspection and enrichment runs.
    if args.upkeep_interval_ms > 0 {
        let every = std::time::Duration::from_millis(args.upkeep_interval_ms);
        tokio::spawn(aiden_service::upkeep::runner::Runner::new(app.clone(), every).run());
    }
    // MET-4: values past their metric's retentionDays go, once a minute (idempotent, so every
    // instance may run it).
    tokio::spawn({
        let app = app.clone();
        async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                every.tick().await;
                match app.sweep_metric_values().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(removed = n, "metric retention sweep"),
                    Err(e) => tracing::warn!(error = %e, "metric retention sweep failed"),
                }
            }
        }
    });
    match args.admin_token.as_deref() {
        Some(token) => app
            .bootstrap_admin(token)
            .await
            .map_err(|e| anyhow::anyhow!("bootstrap admin: {e}"))?,
        None => tracing::warn!(
            "AIDEN_ADMIN_TOKEN is not set: no admin can log in unless one exists already"
        ),
    }
    // The first run and the first search after a start are as fast as the next.
    let passes = std::time::Duration::from_millis(args.engine_warm_up_ms);
    let recall = args
        .recall
        .warm_up
        .then(|| std::time::Duration::from_millis(args.recall.warm_up_ms));
    warm::before_serving(&app, &graph, passes, recall).await;
    let server = aiden_api::Application::build(
        app,
        &args.http_addr,
        args.amqp_uri.clone(),
        notifier.clone(),
    )
    .await
    .with_context(|| format!("binding {}", args.http_addr))?;
    tracing::info!(addr = %server.local_addr()?, "aiden API listening");
    // The engine starts once the port is bound: the port makes the default instance id unique
    // on this host, so a second process with the same id never gets this far.
    let lease = aiden_engine::Lease::new(
        engine_graph,
        args.instance_id(server.port()),
        std::time::Duration::from_millis(args.engine_lease_ms),
    );
    let engine = engine
        .with_lease(lease.clone())
        .with_shared_start_floor(args.engine_shared_start_floor);
    let engine = tokio::spawn(engine.run());
    server.run().await?;
    engine.abort();
    lease.release().await;
    Ok(())
}

/// The engine's own Bolt connections: its pass, its sweep and recovery (one at a time), the
/// lease's renewals, and one spare.
const ENGINE_CONNECTIONS: usize = 4;

fn vault(key: Option<&str>) -> anyhow::Result<aiden_service::Vault> {
    let key = key.context("AIDEN_MASTER_KEY is required (base64 of 32 bytes)")?;
    aiden_service::Vault::from_base64(key).map_err(|e| anyhow::anyhow!("AIDEN_MASTER_KEY: {e}"))
}

/// A worker pool's own `/metrics` (Prometheus text), when `--metrics-addr` is set.
async fn serve_worker_metrics(addr: Option<&str>) -> anyhow::Result<()> {
    aiden_api::metrics::install();
    let Some(addr) = addr else { return Ok(()) };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the metrics endpoint {addr}"))?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async {
            (
                [(
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; version=0.0.4",
                )],
                aiden_api::metrics::render(),
            )
        }),
    );
    tracing::info!(%addr, "worker metrics listening");
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!(error = %e, "worker metrics endpoint stopped");
        }
    });
    Ok(())
}

/// Queue depth and consumers per queue, every second (`aiden_queue_messages`,
/// `aiden_queue_consumers`), and the run queues' backlog for admission.
async fn watch_queues(amqp_uri: String, admission: aiden_service::Admission) {
    use aiden_jobs::topology::{job_queue, OperationType, ENGINE_QUEUE};
    let run_queues: Vec<String> = OperationType::ALL
        .iter()
        .map(|t| job_queue(t.as_str()))
        .chain([ENGINE_QUEUE.to_owned()])
        .collect();
    let mut broker: Option<aiden_jobs::Broker> = None;
    loop {
        if broker.as_ref().is_none_or(|b| !b.is_connected()) {
            broker = aiden_jobs::Broker::connect(&amqp_uri).await.ok();
        }
        if let Some(b) = &broker {
            match b.queue_depths().await {
                Ok(depths) => {
                    let backlog = depths
                        .iter()
                        .filter(|(q, _, _)| run_queues.contains(q))
                        .map(|(_, m, _)| u64::from(*m))
                        .sum();
                    admission.observe(backlog);
                    for (queue, messages, consumers) in depths {
                        metrics::gauge!("aiden_queue_messages", "queue" => queue.clone())
                            .set(f64::from(messages));
                        metrics::gauge!("aiden_queue_consumers", "queue" => queue)
                            .set(f64::from(consumers));
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "queue depths unavailable");
                    broker = None;
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

async fn worker(mut args: WorkerArgs) -> anyhow::Result<()> {
    args.amqp_uri = aiden_jobs::nodes::from_env(&args.amqp_uri);
    serve_worker_metrics(args.metrics_addr.as_deref()).await?;
    if args.operation_type == "episode" {
        let graph = args.graph.connect().await?;
        tracing::info!(graphiti = %args.graphiti_url, concurrency = args.concurrency, "episode ingestion pool starting");
        return aiden_workers::episodes::pool::run(
            aiden_workers::episodes::pool::EpisodePoolConfig {
                amqp_uri: args.amqp_uri,
                graph,
                graphiti_url: args.graphiti_url,
                concurrency: args.concurrency,
                extract_timeout: std::time::Duration::from_secs(args.extract_timeout_s.max(1)),
            },
        )
        .await;
    }
    let Some(operation_type) = aiden_jobs::OperationType::parse(&args.operation_type) else {
        anyhow::bail!(
            "--type must be one of {} or episode",
            aiden_jobs::OperationType::names().join(", ")
        );
    };
    let graph = args.graph.connect().await?;
    let vault = vault(args.master_key.as_deref())?;
    tracing::info!(r#type = %args.operation_type, concurrency = args.concurrency, "worker pool starting");
    aiden_workers::pool::run(aiden_workers::pool::PoolConfig {
        operation_type,
        concurrency: args.concurrency,
        amqp_uri: args.amqp_uri,
        graph,
        vault,
        started_notice_after: std::time::Duration::from_millis(args.started_notice_after_ms),
    })
    .await
}

async fn migrate(args: GraphArgs) -> anyhow::Result<()> {
    let graph = args.connect().await?;
    let applied = aiden_graph::migrate::run(&graph).await?;
    if applied.is_empty() {
        println!("schema up to date");
    } else {
        for id in applied {
            println!("applied {id}");
        }
    }
    Ok(())
}

async fn check(mut args: GraphArgs) -> anyhow::Result<ExitCode> {
    // An audit scans whole labels: on a graph with tens of thousands of runs one statement
    // takes seconds, past the default response timeout.
    args.neo4j_timeout_ms = args.neo4j_timeout_ms.max(300_000);
    let graph = args.connect().await?;
    let findings = aiden_service::Auditor::new(graph)
        .audit()
        .await
        .map_err(|e| anyhow::anyhow!("audit failed: {e}"))?;
    if findings.is_empty() {
        println!("check: no violations");
        return Ok(ExitCode::SUCCESS);
    }
    for f in &findings {
        println!("{}\t{}\t{}", f.invariant, f.id, f.message);
    }
    println!("check: {} violation(s)", findings.len());
    Ok(ExitCode::FAILURE)
}
