//! The router's memory intents (SRCH-4, SRCH-5) against real processes: the Graphiti
//! service with its default embedder (no LLM: extraction off), `aiden serve`, the episode,
//! `llm_call` and `recall` pools, and a scripted OpenAI-compatible model for the agent. A user
//! asks, in one conversation, to remember something (`/remember …`: an intent with
//! `memory: write`); in a new conversation they ask about it in other words (`/recall …`:
//! `memory: read`), and the recall pre-fetch puts the memory in the model's prompt. Nobody else
//! sees it; once forgotten, nothing finds it.

use std::time::{Duration, Instant};

use aiden_tests::procs::{free_port, spawn_env, Api};
use aiden_tests::scripted_model;
use reqwest::Method;
use serde_json::{json, Value};

use super::recall::{conversation, new_user, ok, say, search};
use super::{
    database, drop_vhost, fresh_vhost, graphiti, park_pending_items, serve_env, wait_http,
};

const FACT: &str = "my sister Ines lives in Porto and teaches the cello there";
const QUESTION: &str = "which city is my sibling based in?";

/// A's model, knowledge Service, recall Tool and an agent Process whose router has the two
/// memory intents (prefix-routed) and a plain fallback.
async fn memory_agent(a: &Api, model_url: &str, graphiti_url: &str) -> String {
    let tag = aiden_tests::unique("mem").replace('-', "");
    let post = |path: &'static str, body: Value| ok(a, Method::POST, path, Some(body), 201);
    let model = aiden_tests::chaos::scripted_model_tool(a, model_url, &tag).await;
    post(
        "/v1/services",
        json!({"id": format!("svc-knowledge-{tag}"), "name": "knowledge", "type": "knowledge",
        "protocol": "http", "requiresSecret": false, "endpoint": graphiti_url, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint"],
            "properties": {"endpoint": {"type": "string"}}}}),
    )
    .await;
    post(
        "/v1/tools",
        json!({"id": format!("recall-{tag}"), "name": "my memory",
        "serviceId": format!("svc-knowledge-{tag}"),
        "connectionParams": {"endpoint": graphiti_url},
        "operation": {"type": "recall", "limit": 5},
        "inputSchema": {"type": "object", "required": ["q"],
            "properties": {"q": {"type": "string"}}},
        "outputSchema": {"type": "object", "required": ["hits"]}, "enabled": true}),
    )
    .await;
    let id = format!("proc-{tag}");
    post(
        "/v1/processes",
        json!({"id": id, "name": "assistant with memory",
        "initialContext": ["userMessage", "workingMemory"],
        "steps": [{"id": "answer", "tool": model,
            "agent": {"tools": [format!("recall-{tag}")],
                "router": {"fallback": "chat", "intents": [
                    {"name": "chat"},
                    {"name": "memory_write", "prefix": "/remember", "memory": "write"},
                    {"name": "memory_read", "prefix": "/recall", "memory": "read",
                     "tools": [format!("recall-{tag}")]}]}},
            "inputs": {"message": "{{userMessage}}", "memory": "{{workingMemory}}"},
            "output": {"variable": "a", "required": true}}],
        "outputTemplate": "{{a.text}}"}),
    )
    .await;
    id
}

/// The user says `text` in a new conversation and the agent answers: the conversation, the
/// user's message (`turnId=…&alternativeId=…`) and the settled run.
async fn ask(a: &Api, process: &str, title: &str, text: &str) -> (String, String, Value) {
    let c = conversation(a, title).await;
    let (turn, alt) = say(a, &c, text, None).await;
    let started = ok(
        a,
        Method::POST,
        &format!("/v1/conversations/{c}/agent-turns"),
        Some(json!({"processId": process, "parentTurnId": turn})),
        202,
    )
    .await;
    let run = a
        .wait_settled(started["runId"].as_str().unwrap(), Duration::from_secs(60))
        .await;
    assert_eq!(run["status"], "completed", "{run}");
    (c, format!("turnId={turn}&alternativeId={alt}"), run)
}

/// The caller's memories, once the first is embedded (found by meaning, not only words).
async fn embedded_memories(a: &Api, within: Duration) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let page = ok(a, Method::GET, "/v1/memories", None, 200).await;
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if items.first().is_some_and(|m| m["embedded"] == true) {
            return items;
        }
        assert!(Instant::now() < deadline, "memory not embedded: {page}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The Memories in a working memory's `retrievedContext`.
fn recalled_memories(wm: &Value) -> Vec<&str> {
    wm["retrievedContext"]
        .as_array()
        .expect("retrievedContext")
        .iter()
        .filter(|r| r["kind"] == "memory")
        .map(|r| r["id"].as_str().unwrap())
        .collect()
}

fn memory_hits(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["kind"] == "memory")
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srch_4_5_memory_write_then_a_new_conversations_memory_read_recalls_it_for_its_owner_only()
{
    let _serial = super::SERIAL.lock().await;
    // Not beside the Episode tests' processes (one engine lease, one relay per database).
    super::episodes::retire();
    let db = database();
    let (vhost, amqp) = fresh_vhost();
    let graphiti_port = free_port();
    let _service = graphiti(graphiti_port, None, &db);
    let graphiti_url = format!("http://127.0.0.1:{graphiti_port}");
    wait_http(&format!("{graphiti_url}/healthz"), Duration::from_secs(60)).await;
    park_pending_items(&db).await;
    let (model, model_url) = scripted_model::start().await;
    let port = free_port();
    let extra = serve_env(&db, &amqp, &graphiti_url);
    let _serve = spawn_env(&["serve"], port, &extra);
    let _pools: Vec<_> = ["episode", "llm_call", "recall"]
        .into_iter()
        .map(|t| spawn_env(&["worker", "--type", t], port, &extra))
        .collect();
    let admin = Api::local(port);
    admin.wait_ready().await;
    let (_, a) = new_user(&admin).await;
    let (_, b) = new_user(&admin).await;
    let process = memory_agent(&a, &model_url, &graphiti_url).await;

    // SRCH-4: `/remember …` routes to memory_write; the step's completion keeps the message.
    let (first, _, run) = ask(
        &a,
        &process,
        "tell you something",
        &format!("/remember {FACT}"),
    )
    .await;
    let kept = embedded_memories(&a, Duration::from_secs(90)).await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    let memory = &kept[0];
    assert_eq!(memory["content"], FACT, "kept without the prefix");
    assert_eq!(memory["conversationId"], first.as_str());
    assert_eq!(memory["runId"], run["id"]);
    let memory_id = memory["id"].as_str().unwrap().to_owned();

    // Only its owner sees it: not listed, found, nor forgotten by anyone else (SRCH-2).
    let theirs = ok(&b, Method::GET, "/v1/memories", None, 200).await;
    assert_eq!(theirs["items"], json!([]));
    assert!(memory_hits(&search(&b, QUESTION, "").await).is_empty());
    let (s, _) = b
        .call(Method::DELETE, &format!("/v1/memories/{memory_id}"), None)
        .await;
    assert_eq!(s, 404);

    // Found by meaning: the question shares no word with the fact but "my".
    let found = search(&a, QUESTION, "&kinds=memory").await;
    assert_eq!(memory_hits(&found).first(), Some(&memory_id), "{found}");
    assert!(found["hits"][0]["similarity"].as_f64().unwrap() > 0.3);

    // SRCH-5: in a new conversation, `/recall …` pre-fetches with the recall Tool: the memory
    // is in the model's prompt (layer 4), and the model is offered no tool.
    let asked_before = model.requests().len();
    let (second, message, run) =
        ask(&a, &process, "a question", &format!("/recall {QUESTION}")).await;
    let requests = model.requests()[asked_before..].to_vec();
    assert_eq!(
        requests.len(),
        1,
        "one model turn, no router turn: {requests:?}"
    );
    assert_eq!(
        requests[0]["tools"],
        Value::Null,
        "no tools offered: {}",
        requests[0]
    );
    let prompt = requests[0]["messages"].to_string();
    assert!(
        prompt.contains("RECALLED FROM MEMORY") && prompt.contains(FACT),
        "{prompt}"
    );
    let calls: Vec<&Value> = run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stepId"].as_str().is_some_and(|id| id.contains("#t")))
        .collect();
    assert_eq!(calls.len(), 1, "{run}");
    assert_eq!(calls[0]["status"], "completed");
    // And later conversations' retrieved context for such a message carries it, whatever the
    // intent.
    let wm = ok(
        &a,
        Method::GET,
        &format!("/v1/conversations/{second}/working-memory?{message}"),
        None,
        200,
    )
    .await;
    assert_eq!(recalled_memories(&wm), [memory_id.as_str()], "{wm}");
    // The agent's run was given the same (its turn searched before its write transaction).
    assert_eq!(
        recalled_memories(&run["inputs"]["workingMemory"]),
        [memory_id.as_str()],
        "{run}"
    );

    // SRCH-4: a blank memory is refused; a forgotten one is found by nothing.
    let (s, body) = a
        .call(Method::POST, "/v1/memories", Some(json!({"content": "  "})))
        .await;
    let named = body["error"]["details"][0]["invariant"].as_str();
    assert_eq!((s, named), (422, Some("SRCH-4")), "{body}");
    ok(
        &a,
        Method::DELETE,
        &format!("/v1/memories/{memory_id}"),
        None,
        204,
    )
    .await;
    assert!(memory_hits(&search(&a, QUESTION, "").await).is_empty());
    assert!(memory_hits(&search(&a, "Ines cello Porto", "").await).is_empty());
    // Nor does its Episode keep the text: it stays bound, blank.
    let episodes: Vec<Value> = aiden_tests::graph_rows(
        aiden_tests::aiden_graph_query(
            "MATCH (:Memory {id: $id})-[:HAS_CONTENT]->(e:Episodic) RETURN e.content AS content",
        )
        .param("id", memory_id.clone()),
    )
    .await;
    assert_eq!(episodes, [json!({"content": ""})], "{episodes:?}");
    let left = ok(&a, Method::GET, "/v1/memories", None, 200).await;
    assert_eq!(left["items"], json!([]));
    drop_vhost(&vhost);
}
