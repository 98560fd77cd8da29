//! `agent_loop`: the overhead of the agent loop per tool call — from the
//! model turn that asks for a tool finishing to the next model turn starting, minus the tool's
//! own latency — with a scripted OpenAI-compatible model served here (it asks for the echo tool
//! once, then answers) and the nginx echo as the tool. Timestamps are the workers' own
//! (`startedAt`/`finishedAt` of each call's step run) and the tool's `telemetry.latencyMs`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Json;
use serde_json::{json, Value};

use crate::{drive_runs, percentile, Api};

/// The scripted model: a call of the first tool offered while no tool result is in the
/// conversation, then an answer.
async fn model(Json(body): Json<Value>) -> Json<Value> {
    let answered = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|x| x["role"] == "tool"));
    let tool = body["tools"][0]["function"]["name"].clone();
    let message = if answered {
        json!({"role": "assistant", "content": "done"})
    } else {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
            "type": "function", "function": {"name": tool, "arguments": "{\"v\":\"x\"}"}}]})
    };
    Json(
        json!({"id": "chatcmpl-b", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}),
    )
}

pub struct AgentIds {
    pub service: String,
    pub model: String,
    pub process: String,
}

/// Serves the model and defines its Service, Tool and the agent Process over `echo_tool`.
pub async fn setup(api: &Api, tag: &str, echo_tool: &str) -> anyhow::Result<AgentIds> {
    let ids = AgentIds {
        service: format!("bench-model-service-{tag}"),
        model: format!("bench-model-{tag}"),
        process: format!("bench-agent-{tag}"),
    };
    let name = "Benchmark scripted model";
    crate::scripted_model::serve_and_define(api, model, &ids.service, &ids.model, name).await?;
    api.send(
        reqwest::Method::POST,
        "/v1/processes",
        Some(json!({
        "id": ids.process, "name": "Benchmark: agent with one tool call",
        "steps": [{"id": "answer", "tool": ids.model, "agent": {"tools": [echo_tool]},
                   "inputs": {"message": "echo x"}, "output": {"variable": "a"}}],
        "outputTemplate": "{{a.text}}"})),
    )
    .await?;
    Ok(ids)
}

fn millis(v: &Value) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// The loop's overhead around one run's tool call, in ms.
fn overhead(run: &Value) -> Option<f64> {
    let steps = run["steps"].as_array()?;
    let by_id = |id: &str| steps.iter().find(|s| s["stepId"] == id);
    let asked = millis(&by_id("answer#m1")?["finishedAt"])?;
    let read = millis(&by_id("answer#m3")?["startedAt"])?;
    let tool = by_id("answer#t2")?["telemetry"]["latencyMs"].as_f64()?;
    Some((read - asked) as f64 - tool)
}

/// `runs` agent runs, `in_flight` at a time; one JSON line.
pub async fn scenario(
    api: Arc<Api>,
    ids: &AgentIds,
    runs: usize,
    in_flight: usize,
) -> anyhow::Result<Value> {
    let (done, wall) = drive_runs(&api, &ids.process, runs, in_flight).await?;
    let mut latencies: Vec<Duration> = done.iter().map(|(d, _)| *d).collect();
    latencies.sort();
    let mut overheads = Vec::with_capacity(done.len());
    for (_, id) in &done {
        let run = api
            .send(reqwest::Method::GET, &format!("/v1/runs/{id}"), None)
            .await?;
        let o = overhead(&run).with_context(|| format!("a run without its three calls: {run}"))?;
        overheads.push(o);
    }
    overheads.sort_by(f64::total_cmp);
    let pick = |p: f64| {
        let i = ((overheads.len() as f64 - 1.0) * p).round() as usize;
        overheads.get(i).copied().unwrap_or(0.0)
    };
    Ok(json!({
        "system": "aiden", "scenario": "agent_loop", "workflows": runs, "in_flight": in_flight,
        "calls_per_workflow": 3, "wall_s": (wall * 1000.0).round() / 1000.0,
        "p50_ms": (percentile(&latencies, 0.50) * 100.0).round() / 100.0,
        "p99_ms": (percentile(&latencies, 0.99) * 100.0).round() / 100.0,
        "tool_call_overhead_p50_ms": pick(0.50), "tool_call_overhead_p99_ms": pick(0.99),
        "measured_calls": overheads.len(),
    }))
}

pub async fn cleanup(api: &Api, ids: &AgentIds) {
    crate::delete_all(
        api,
        &[
            format!("/v1/processes/{}", ids.process),
            format!("/v1/tools/{}", ids.model),
            format!("/v1/services/{}", ids.service),
        ],
    )
    .await
}
