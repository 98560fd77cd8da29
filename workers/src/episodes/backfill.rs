//! Recall: content bound before embeddings existed, or whose embedding failed, is
//! embedded when an episode pool starts — 32 texts per call to the embedder, until none is left;
//! then the task ends (until the next start). Without it, such content is found by its words
//! only. Several pools starting at once may embed the same rows: the write is idempotent.

use std::collections::HashSet;
use std::time::Duration;

use aiden_domain::knowledge::currency;
use aiden_graph::knowledge::{self as kg, TargetKind};
use aiden_graph::Graph;
use aiden_recall::{EmbedError, Embedder};

const BATCH: i64 = 32;

pub async fn run(graph: Graph, embedder: Embedder) {
    let mut done = 0usize;
    let mut seen = HashSet::new();
    loop {
        let batch = match kg::unembedded(&graph, BATCH).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "embedding backfill: graph unavailable; retrying");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
        };
        // Rows already embedded once that come back (their write did not stick): stop rather
        // than loop.
        if batch.is_empty()
            || batch
                .iter()
                .all(|r| seen.contains(&(r.id.clone(), r.revision)))
        {
            if done > 0 {
                tracing::info!(embedded = done, "embedding backfill finished");
            }
            return;
        }
        let texts: Vec<String> = batch
            .iter()
            .map(|r| r.content.chars().take(8_000).collect())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let embedded = match embedder.embed(&refs).await {
            Ok(e) => e,
            Err(EmbedError::Unavailable(m)) => {
                tracing::debug!(error = %m, "embedding backfill: embedder unavailable; waiting");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "embedding backfill stopped: such content is found by its words");
                return;
            }
        };
        for (row, vector) in batch.iter().zip(&embedded.vectors) {
            seen.insert((row.id.clone(), row.revision));
            let Some(kind) = TargetKind::parse(&row.kind) else {
                continue;
            };
            let says_change = currency::says_change(&row.content);
            let write = kg::embed(
                &graph,
                kind,
                &row.id,
                row.revision,
                vector,
                &embedded.model,
                says_change,
            );
            match write.await {
                Ok(_) => done += 1,
                Err(e) => {
                    tracing::warn!(id = %row.id, error = %e, "embedding backfill: not written")
                }
            }
        }
    }
}
