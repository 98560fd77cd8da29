//! The `llm_call` and `graph_query` executors through whole runs: protocol-faithful local
//! OpenAI and Anthropic servers with scripted replies, and the real Bolt server as the Tool's
//! target graph.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiden_tests::{admin, fixtures, setting, unique, Client};
use axum::{
    extract::State, http::HeaderMap, http::StatusCode, response::IntoResponse, routing::post, Json,
    Router,
};
use serde_json::{json, Value};

#[derive(Clone, Default)]
pub(crate) struct Provider {
    pub(crate) requests: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
}

fn prompt_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

async fn openai(
    State(p): State<Provider>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> impl IntoResponse {
    p.requests.lock().unwrap().push((headers, body.clone()));
    let prompt = prompt_of(&body);
    let count = p
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, b)| prompt_of(b) == prompt)
        .count();
    if prompt.contains("rate-limit-once") && count == 1 {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({"error": {"message": "slow down", "type": "rate_limit"}})),
        );
    }
    if prompt.contains("always-500") {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "boom"}})),
        );
    }
    let content = if body["response_format"]["type"] == "json_object" {
        "```json\n{\"answer\": 42}\n```".to_owned()
    } else {
        format!("echo: {prompt}")
    };
    (
        StatusCode::OK,
        Json(
            json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "fake-gpt-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}),
        ),
    )
}

async fn anthropic(
    State(p): State<Provider>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> impl IntoResponse {
    p.requests.lock().unwrap().push((headers, body.clone()));
    if prompt_of(&body).contains("overloaded") {
        return (
            StatusCode::from_u16(529).unwrap(),
            Json(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
        );
    }
    (
        StatusCode::OK,
        Json(
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "fake-claude-1",
        "content": [{"type": "text", "text": "claude says "}, {"type": "text", "text": prompt_of(&body)}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 3}}),
        ),
    )
}

pub(crate) async fn provider() -> (Provider, String) {
    let p = Provider::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .with_state(p.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (p, format!("http://{addr}/v1"))
}

async fn wait_run(client: &Client, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = client.get(&format!("/v1/runs/{id}")).await.ok(200).clone();
        if matches!(
            run["status"].as_str(),
            Some("completed" | "failed" | "canceled")
        ) {
            return run;
        }
        assert!(Instant::now() < deadline, "run did not settle: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn run_one(c: &Client, tool: &str, inputs: Value, start: Value) -> Value {
    let p = fixtures::create(
        c,
        "processes",
        json!({"id": unique("proc"), "name": "llm",
        "initialContext": start.as_object().unwrap().keys().collect::<Vec<_>>(),
        "steps": [{"id": "s", "tool": tool, "inputs": inputs, "output": {"variable": "out"}}],
        "outputTemplate": "{{out}}"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = c
        .post(&format!("/v1/processes/{p}/runs"), json!({"inputs": start}))
        .await;
    let id = r.ok(202)["runId"].as_str().unwrap().to_owned();
    wait_run(c, &id).await
}

async fn llm_tool(c: &Client, endpoint: &str, api: &str, secret: &str, format: &str) -> String {
    let svc = fixtures::create(c, "services", json!({"id": unique("svc"), "name": "LLM", "type": "llm_provider",
        "protocol": "http", "requiresSecret": true, "endpoint": endpoint, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"], "properties": {
            "endpoint": {"type": "string"}, "model": {"type": "string"}, "temperature": {"type": "number"},
            "maxTokens": {"type": "integer"}}}})).await["id"].as_str().unwrap().to_owned();
    let output = if format == "json" {
        json!({"type": "object"})
    } else {
        json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}})
    };
    fixtures::create(c, "tools", json!({"id": unique("llm"), "name": "ask", "serviceId": svc, "secretId": secret,
        "connectionParams": {"endpoint": endpoint, "model": "requested-model", "temperature": 0.1, "maxTokens": 64},
        "operation": {"type": "llm_call", "api": api, "systemPrompt": "Be brief about {{topic}}.",
            "promptTemplate": "{{instruction}} {{topic}}", "responseFormat": format},
        "inputSchema": {"type": "object", "required": ["instruction", "topic"], "properties": {
            "instruction": {"type": "string"}, "topic": {"type": "string"}}},
        "outputSchema": output, "enabled": true})).await["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn llm_call_speaks_openai_chat_completions_and_records_usage() {
    let c = admin();
    let (p, endpoint) = provider().await;
    let key = format!("sk-test-{}", unique("k"));
    let secret = fixtures::secret(&c, &key).await;
    let tool = llm_tool(&c, &endpoint, "openai", &secret, "text").await;
    let run = run_one(
        &c,
        &tool,
        json!({"instruction": "Explain", "topic": "{{t}}"}),
        json!({"t": "graphs"}),
    )
    .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], json!({"text": "echo: Explain graphs"}));
    let tel = &run["steps"][0]["telemetry"];
    assert_eq!(tel["provider"], "openai");
    assert_eq!(tel["model"], "fake-gpt-1");
    assert_eq!(
        tel["tokenUsage"],
        json!({"promptTokens": 11, "completionTokens": 7, "totalTokens": 18})
    );
    let (headers, body) = p.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(headers["authorization"], format!("Bearer {key}"));
    assert_eq!(body["model"], "requested-model");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "Be brief about graphs."})
    );
    assert_eq!(body["max_tokens"], 64);
    assert!(
        !run.to_string().contains(&key),
        "the secret never appears in a run"
    );

    // json responseFormat: the fenced JSON answer is parsed.
    let tool = llm_tool(&c, &endpoint, "openai", &secret, "json").await;
    let run = run_one(
        &c,
        &tool,
        json!({"instruction": "Give", "topic": "json"}),
        json!({}),
    )
    .await;
    assert_eq!(run["output"], json!({"answer": 42}), "{run}");
}

#[tokio::test]
async fn llm_call_retries_rate_limits_and_fails_after_server_errors() {
    let c = admin();
    let (p, endpoint) = provider().await;
    let secret = fixtures::secret(&c, "sk-rl").await;
    let tool = llm_tool(&c, &endpoint, "openai", &secret, "text").await;
    let run = run_one(
        &c,
        &tool,
        json!({"instruction": "rate-limit-once", "topic": unique("t")}),
        json!({}),
    )
    .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["steps"][0]["attempts"], 2, "{run}");
    let run = run_one(
        &c,
        &tool,
        json!({"instruction": "always-500", "topic": unique("t")}),
        json!({}),
    )
    .await;
    assert_eq!(run["status"], "failed");
    assert_eq!(run["steps"][0]["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(run["steps"][0]["attempts"], 3);
    assert!(p.requests.lock().unwrap().len() >= 5);
}

#[tokio::test]
async fn llm_call_speaks_anthropic_messages() {
    let c = admin();
    let (p, endpoint) = provider().await;
    let key = "sk-ant-test";
    let secret = fixtures::secret(&c, key).await;
    let tool = llm_tool(&c, &endpoint, "anthropic", &secret, "text").await;
    let run = run_one(
        &c,
        &tool,
        json!({"instruction": "Hi", "topic": "there"}),
        json!({}),
    )
    .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], json!({"text": "claude says Hi there"}));
    let tel = &run["steps"][0]["telemetry"];
    assert_eq!(
        (tel["provider"].as_str(), tel["model"].as_str()),
        (Some("anthropic"), Some("fake-claude-1"))
    );
    assert_eq!(tel["tokenUsage"]["totalTokens"], 8);
    let (headers, body) = p.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(headers["x-api-key"], key);
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(body["system"], "Be brief about there.");
    let run = run_one(
        &c,
        &tool,
        json!({"instruction": "overloaded", "topic": unique("t")}),
        json!({}),
    )
    .await;
    assert_eq!(
        run["steps"][0]["error"]["code"], "UPSTREAM_ERROR",
        "529 overloaded is retryable: {run}"
    );
    assert_eq!(run["steps"][0]["attempts"], 3);
}

#[tokio::test]
async fn graph_query_writes_and_reads_the_tools_own_graph() {
    let c = admin();
    let uri = setting("AIDEN_NEO4J_URI", Some("bolt://127.0.0.1:7688"));
    let secret = fixtures::secret(&c, &setting("AIDEN_NEO4J_PASSWORD", None)).await;
    let mut svc = fixtures::graph_service_body();
    svc["endpoint"] = json!(uri);
    svc["connectionSchema"]["properties"]["user"] = json!({"type": "string"});
    let svc = fixtures::create(&c, "services", svc).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let params = json!({"endpoint": uri, "database": setting("AIDEN_NEO4J_DATABASE", Some("neo4j")),
        "user": setting("AIDEN_NEO4J_USER", Some("neo4j"))});
    let tool = |query: &str, access: &str| {
        json!({"id": unique("gq"), "name": "gq", "serviceId": svc,
        "secretId": secret, "connectionParams": params,
        "operation": {"type": "graph_query", "query": query, "access": access},
        "inputSchema": {"type": "object", "required": ["tag"], "properties": {"tag": {"type": "string"}}},
        "outputSchema": {"type": "object", "required": ["rows"]}, "enabled": true})
    };
    let write = fixtures::create(
        &c,
        "tools",
        tool(
            "CREATE (n:ExecutorTestNode {tag: $tag, n: 7}) RETURN n.tag AS tag",
            "write",
        ),
    )
    .await;
    let read = fixtures::create(
        &c,
        "tools",
        tool(
            "MATCH (n:ExecutorTestNode {tag: $tag}) RETURN n.tag AS tag, n.n AS n",
            "read",
        ),
    )
    .await;
    let bad = fixtures::create(
        &c,
        "tools",
        tool(
            "MATCH (n:ExecutorTestNode {tag: $tag}) RETURN n.tag AS tag, n.n AS n",
            "read",
        ),
    )
    .await;
    let tag = unique("tag");
    let p = fixtures::create(&c, "processes", json!({"id": unique("proc"), "name": "gq", "initialContext": ["tag"],
        "steps": [{"id": "w", "tool": write["id"], "inputs": {"tag": "{{tag}}"}, "output": {"variable": "w"}},
                  {"id": "r", "tool": read["id"], "inputs": {"tag": "{{tag}}"}, "output": {"variable": "r"}}],
        "outputTemplate": "{{r.rows}}"})).await;
    let r = c
        .post(
            &format!("/v1/processes/{}/runs", p["id"].as_str().unwrap()),
            json!({"inputs": {"tag": tag}}),
        )
        .await;
    let run = wait_run(&c, r.ok(202)["runId"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["output"], json!([{"tag": tag, "n": 7}]));
    assert_eq!(run["steps"][0]["output"]["rows"], json!([{"tag": tag}]));
    // Clean up with the same tool family: a write query removing the node.
    let cleanup = fixtures::create(
        &c,
        "tools",
        tool(
            "MATCH (n:ExecutorTestNode {tag: $tag}) DELETE n RETURN count(*) AS deleted",
            "write",
        ),
    )
    .await;
    let run = run_one(
        &c,
        cleanup["id"].as_str().unwrap(),
        json!({"tag": tag}),
        json!({}),
    )
    .await;
    assert_eq!(run["output"]["rows"], json!([{"deleted": 1}]), "{run}");
    let _ = bad;
}

/// One resource of a seed file, as written there.
pub(crate) fn seed_spec(text: &str, id: &str) -> Value {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("seed yaml"))
        .find(|d| d["spec"]["id"] == id)
        .unwrap_or_else(|| panic!("seed defines {id}"))["spec"]
        .clone()
}

/// The seeded default agent Process and its LLM Tool, exactly as `seed/` defines them, with
/// the Tool pointed at the fake provider.
async fn seeded_converse_process(c: &Client, endpoint: &str, secret: &str) -> String {
    let svc = fixtures::create(c, "services", json!({"id": unique("svc"), "name": "LLM", "type": "llm_provider",
        "protocol": "http", "requiresSecret": true, "endpoint": endpoint, "enabled": true,
        "connectionSchema": {"type": "object", "required": ["endpoint", "model"], "properties": {
            "endpoint": {"type": "string"}, "model": {"type": "string"}, "temperature": {"type": "number"},
            "maxTokens": {"type": "integer"}}}})).await["id"].as_str().unwrap().to_owned();
    // The seeded Tool is made from its ToolTemplate: the template's operation and schemas.
    let mut tool = seed_spec(include_str!("../../seed/50-tools.yaml"), "tool-llm-answer");
    let template = seed_spec(
        include_str!("../../seed/20-tool-templates.yaml"),
        tool["toolTemplateId"].as_str().unwrap(),
    );
    tool.as_object_mut().unwrap().remove("toolTemplateId");
    for field in ["operation", "inputSchema", "outputSchema"] {
        tool[field] = template[field].clone();
    }
    tool["id"] = json!(unique("answer"));
    tool["serviceId"] = json!(svc);
    tool["secretId"] = json!(secret);
    tool["connectionParams"] = json!({"endpoint": endpoint, "model": "m", "maxTokens": 64});
    tool["operation"]["api"] = json!("openai");
    let tool = fixtures::create(c, "tools", tool).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    converse_on(c, &tool).await
}

/// The seed's `process-converse`, shared, answering with `tool`.
pub(crate) async fn converse_on(c: &Client, tool: &str) -> String {
    let mut spec = seed_spec(
        include_str!("../../seed/60-processes.yaml"),
        "process-converse",
    );
    spec["id"] = json!(unique("converse"));
    spec["steps"][0]["tool"] = json!(tool);
    fixtures::create(c, "processes", spec).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub(crate) async fn settled_alternative(c: &Client, turn: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = c.get(&format!("/v1/turns/{turn}")).await.ok(200).clone();
        let active = t["alternatives"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["isActive"] == true)
            .cloned()
            .unwrap();
        if active["cacheStatus"] != "generating" {
            return active;
        }
        assert!(
            Instant::now() < deadline,
            "alternative still generating: {t}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// CONV-2 / WM-1: an agent turn with the seeded `process-converse` sends the working memory
/// (every turn of the path as `speaker: content`) and the user's message to the LLM, and the
/// reply becomes the agent Alternative's content; the next agent turn sees that reply.
#[tokio::test]
async fn conversation_agent_turns_run_the_seeded_converse_process() {
    let c = admin();
    let (p, endpoint) = provider().await;
    let secret = fixtures::secret(&c, &format!("sk-test-{}", unique("k"))).await;
    let process = seeded_converse_process(&c, &endpoint, &secret).await;
    let conv = c
        .post("/v1/conversations", json!({"title": "seeded"}))
        .await;
    let conv = conv.ok(201)["id"].as_str().unwrap().to_owned();
    let first = c
        .post(
            &format!("/v1/conversations/{conv}/turns"),
            json!({"speaker": "user", "content": "What is a graph?"}),
        )
        .await;
    let first = first.ok(201)["id"].as_str().unwrap().to_owned();
    let agent = c
        .post(
            &format!("/v1/conversations/{conv}/agent-turns"),
            json!({"processId": process, "parentTurnId": first}),
        )
        .await;
    let agent = agent.ok(202)["turnId"].as_str().unwrap().to_owned();
    let reply = settled_alternative(&c, &agent).await;
    assert_eq!(reply["cacheStatus"], "valid", "{reply}");
    let prompt = prompt_of(&p.requests.lock().unwrap().last().unwrap().1);
    assert!(
        prompt.contains("User message: What is a graph?"),
        "{prompt}"
    );
    assert!(prompt.contains("user: What is a graph?"), "{prompt}");
    assert_eq!(reply["content"], format!("echo: {prompt}"));
    assert_eq!(
        c.get(&format!("/v1/conversations/{conv}")).await.ok(200)["defaultProcessId"],
        json!(process)
    );

    let second = c
        .post(
            &format!("/v1/conversations/{conv}/turns"),
            json!({"speaker": "user", "content": "And a tree?", "parentTurnId": agent}),
        )
        .await;
    let second = second.ok(201)["id"].as_str().unwrap().to_owned();
    let agent2 = c
        .post(
            &format!("/v1/conversations/{conv}/agent-turns"),
            json!({"processId": process, "parentTurnId": second}),
        )
        .await;
    let agent2 = agent2.ok(202)["turnId"].as_str().unwrap().to_owned();
    assert_eq!(
        settled_alternative(&c, &agent2).await["cacheStatus"],
        "valid"
    );
    let prompt2 = prompt_of(&p.requests.lock().unwrap().last().unwrap().1);
    assert!(prompt2.contains("User message: And a tree?"), "{prompt2}");
    assert!(
        prompt2.contains(&format!("agent: echo: {}", prompt.lines().next().unwrap())),
        "the earlier reply is in the context: {prompt2}"
    );
}
