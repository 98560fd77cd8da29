//! The pool's slots and the Worker nodes they heartbeat (one per slot, so `currentJobId` is
//! exact, WRK-1), with the slot gauges set from the same state.

use aiden_graph::runs;
use serde_json::{json, Value};

use super::{now, Shared};

pub(super) async fn take_slot(shared: &Shared) -> usize {
    let mut slots = shared.slots.lock().await;
    let i = slots
        .iter()
        .position(|s| s.current_job.is_none())
        .unwrap_or(0);
    slots[i].current_job = Some(String::new());
    i
}

pub(super) async fn release_slot(shared: &Shared, slot: usize) {
    shared.slots.lock().await[slot].current_job = None;
}

pub(super) async fn set_job(
    shared: &Shared,
    slot: usize,
    job: Option<String>,
    failed: Option<bool>,
) {
    let mut slots = shared.slots.lock().await;
    slots[slot].current_job = job;
    // Set from the slots themselves (one pool per `aiden worker` process), so a gauge never
    // drifts, whenever the exporter was installed.
    let busy = slots.iter().filter(|s| s.current_job.is_some()).count();
    metrics::gauge!("aiden_worker_slots_busy", "type" => shared.ty.as_str()).set(busy as f64);
    metrics::gauge!("aiden_worker_slots", "type" => shared.ty.as_str()).set(slots.len() as f64);
    match failed {
        Some(true) => {
            slots[slot].processed += 1;
            slots[slot].errors += 1;
        }
        Some(false) => slots[slot].processed += 1,
        None => {}
    }
}

/// Writes every slot's state. `status` is the pool's state; a slot with a job is `busy`.
pub(super) async fn heartbeat(shared: &Shared, status: &str) {
    let at = now();
    let rows: Vec<Value> = shared
        .slots
        .lock()
        .await
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let job = s.current_job.clone().filter(|j| !j.is_empty());
            let st = match (status, &job) {
                ("offline", _) => "offline",
                (_, Some(_)) => "busy",
                _ => "idle",
            };
            json!({"id": shared.worker_id(i), "set": {
                "type": shared.ty, "status": st, "currentJobId": job, "lastHeartbeat": at,
                "processedCount": s.processed, "errorCount": s.errors,
                "startedAt": shared.started_at, "slot": i}})
        })
        .collect();
    let result = async {
        let mut tx = shared.graph.begin().await?;
        runs::heartbeat(&mut tx, rows).await?;
        tx.commit().await
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "heartbeat failed");
    }
}
