//! `aiden migrate`: applies `cypher/schema/NNNN_*.cypher` in order, each once, recording it as a
//! `SchemaMigration` node. Constraint statements use `IF NOT EXISTS`, so a re-run is harmless.

use serde::Deserialize;

use crate::{Error, Graph};

/// The schema files, embedded so the binary carries its own schema.
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_constraints",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0001_constraints.cypher"
        )),
    ),
    (
        "0002_indexes",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0002_indexes.cypher"
        )),
    ),
    (
        "0003_revision_claims",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0003_revision_claims.cypher"
        )),
    ),
    (
        "0004_runs",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0004_runs.cypher"
        )),
    ),
    (
        "0005_conversations",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0005_conversations.cypher"
        )),
    ),
    (
        "0006_run_event_chunks",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0006_run_event_chunks.cypher"
        )),
    ),
    (
        "0007_knowledge",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0007_knowledge.cypher"
        )),
    ),
    (
        "0008_ingest_backfill",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0008_ingest_backfill.cypher"
        )),
    ),
    (
        "0009_reference_edges",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0009_reference_edges.cypher"
        )),
    ),
    (
        "0010_quotas",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0010_quotas.cypher"
        )),
    ),
    (
        "0011_memory_upkeep",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0011_memory_upkeep.cypher"
        )),
    ),
    (
        "0012_api_tokens",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0012_api_tokens.cypher"
        )),
    ),
    (
        "0013_metrics",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0013_metrics.cypher"
        )),
    ),
    (
        "0014_engine_lease",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0014_engine_lease.cypher"
        )),
    ),
    (
        "0015_spend",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0015_spend.cypher"
        )),
    ),
    (
        "0016_lean_step_indexes",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0016_lean_step_indexes.cypher"
        )),
    ),
    (
        "0017_one_knowledge_graph",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0017_one_knowledge_graph.cypher"
        )),
    ),
    (
        "0018_lean_journal",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0018_lean_journal.cypher"
        )),
    ),
    (
        "0019_recall",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0019_recall.cypher"
        )),
    ),
    (
        "0020_memories_and_merges",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0020_memories_and_merges.cypher"
        )),
    ),
    (
        "0021_run_write_versions",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0021_run_write_versions.cypher"
        )),
    ),
    (
        "0022_sessions",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0022_sessions.cypher"
        )),
    ),
    (
        "0023_warm_up",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../cypher/schema/0023_warm_up.cypher"
        )),
    ),
];

/// Statements of one file: comment lines dropped (they may contain `;`), then split on `;`.
pub fn statements(text: &str) -> Vec<String> {
    let code = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    code.split(';')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

#[derive(Deserialize)]
struct Applied {
    id: String,
}

/// Applies what is missing; returns the ids applied now.
pub async fn run(graph: &Graph) -> Result<Vec<String>, Error> {
    let mut tx = graph.begin().await?;
    let applied: Vec<Applied> = tx
        .rows(neo4rs::query("MATCH (m:SchemaMigration) RETURN m.id AS id"))
        .await?;
    tx.commit().await?;
    let mut done = Vec::new();
    for (id, text) in MIGRATIONS {
        if applied.iter().any(|a| a.id == *id) {
            continue;
        }
        // Schema statements run one per transaction (Neo4j refuses schema and data changes mixed).
        for statement in statements(text) {
            let mut tx = graph.begin().await?;
            tx.run(neo4rs::query(&statement)).await?;
            tx.commit().await?;
        }
        let mut tx = graph.begin().await?;
        let now = chrono::Utc::now().to_rfc3339();
        tx.run(
            neo4rs::query("MERGE (m:SchemaMigration {id: $id}) ON CREATE SET m.appliedAt = $now")
                .param("id", *id)
                .param("now", now),
        )
        .await?;
        tx.commit().await?;
        done.push((*id).to_owned());
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;

    /// Every file in `cypher/schema` is applied, in name order: a file added without its entry
    /// here would silently never run.
    #[test]
    fn every_schema_file_is_a_migration_in_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../cypher/schema");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .expect("cypher/schema")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter_map(|n| n.strip_suffix(".cypher").map(str::to_owned))
            .collect();
        files.sort();
        let ids: Vec<&str> = MIGRATIONS.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, files);
    }
}
