//! `mcp_call` through whole runs against a real MCP server built with `rmcp`
//! (`aiden-mcp-fixture`), over stdio and over streamable HTTP.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aiden_tests::{admin, fixtures, unique, Client};
use serde_json::{json, Value};

const FIXTURE: &str = env!("CARGO_BIN_EXE_aiden-mcp-fixture");

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http_fixture() -> (Server, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(FIXTURE)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the MCP fixture did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (Server(child), format!("http://127.0.0.1:{port}/mcp"))
}

async fn service(c: &Client, protocol: &str, endpoint: &str) -> String {
    fixtures::create(
        c,
        "services",
        json!({"id": unique("svc"), "name": "MCP", "type": "mcp_server",
        "protocol": protocol, "requiresSecret": false, "endpoint": endpoint, "enabled": true,
        "connectionSchema": {"type": "object", "properties": {"endpoint": {"type": "string"},
            "command": {"type": "string"}, "args": {"type": "array"}}}}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn tool(
    c: &Client,
    svc: &str,
    params: Value,
    name: &str,
    arguments: Value,
    vars: &[&str],
) -> String {
    let props: serde_json::Map<String, Value> = vars
        .iter()
        .map(|v| (v.to_string(), json!({"type": "string"})))
        .collect();
    fixtures::create(
        c,
        "tools",
        json!({"id": unique("mcp"), "name": name, "serviceId": svc,
        "connectionParams": params,
        "operation": {"type": "mcp_call", "toolName": name, "arguments": arguments},
        "inputSchema": {"type": "object", "required": vars, "properties": props},
        "outputSchema": {"type": "object", "required": ["content"]}, "enabled": true}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn run(c: &Client, tool: &str, inputs: Value, timeout: u64) -> Value {
    let p = fixtures::create(
        c,
        "processes",
        json!({"id": unique("proc"), "name": "mcp",
        "steps": [{"id": "s", "tool": tool, "inputs": inputs, "output": {"variable": "out"},
                   "execution": {"timeout": timeout}}], "outputTemplate": "{{out}}"}),
    )
    .await;
    let r = c
        .post(
            &format!("/v1/processes/{}/runs", p["id"].as_str().unwrap()),
            json!({"inputs": {}}),
        )
        .await;
    let id = r.ok(202)["runId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = c.get(&format!("/v1/runs/{id}")).await.ok(200).clone();
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

fn assert_search(run: &Value, query: &str) {
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["output"]["content"],
        json!([{"type": "text", "text": format!("results for {query}")}])
    );
    assert_eq!(
        run["output"]["structuredContent"],
        json!({"hits": [{"title": format!("{query} 1")}, {"title": format!("{query} 2")}]})
    );
    assert_eq!(run["steps"][0]["telemetry"]["provider"], "mcp");
}

#[tokio::test]
async fn mcp_call_over_stdio_runs_the_servers_tool() {
    let c = admin();
    let svc = service(&c, "stdio", FIXTURE).await;
    let t = tool(
        &c,
        &svc,
        json!({"command": FIXTURE}),
        "search",
        json!({"query": "{{query}}"}),
        &["query"],
    )
    .await;
    assert_search(
        &run(&c, &t, json!({"query": "stdio graphs"}), 10000).await,
        "stdio graphs",
    );
    // The session is reused for the next call.
    assert_search(
        &run(&c, &t, json!({"query": "again"}), 10000).await,
        "again",
    );
}

#[tokio::test]
async fn mcp_call_over_streamable_http_and_its_failure_classes() {
    let c = admin();
    let (_server, url) = http_fixture().await;
    let svc = service(&c, "http", &url).await;
    let params = json!({"endpoint": url});
    let search = tool(
        &c,
        &svc,
        params.clone(),
        "search",
        json!({"query": "{{query}}"}),
        &["query"],
    )
    .await;
    assert_search(
        &run(&c, &search, json!({"query": "http graphs"}), 10000).await,
        "http graphs",
    );

    let fail = tool(&c, &svc, params.clone(), "fail", json!({}), &[]).await;
    let r = run(&c, &fail, json!({}), 10000).await;
    assert_eq!(r["steps"][0]["error"]["code"], "TOOL_ERROR", "{r}");
    assert!(r["steps"][0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("deliberate failure"));
    assert_eq!(r["steps"][0]["attempts"], 1, "isError is permanent");

    let unknown = tool(&c, &svc, params.clone(), "no_such_tool", json!({}), &[]).await;
    let r = run(&c, &unknown, json!({}), 10000).await;
    assert_eq!(r["steps"][0]["error"]["code"], "INVALID_REQUEST", "{r}");

    let slow = fixtures::create(&c, "tools", json!({"id": unique("mcp"), "name": "slow", "serviceId": svc,
        "connectionParams": params,
        "operation": {"type": "mcp_call", "toolName": "slow", "arguments": {"ms": "{{ms}}"}},
        "inputSchema": {"type": "object", "required": ["ms"], "properties": {"ms": {"type": "integer"}}},
        "outputSchema": {"type": "object"}, "enabled": true})).await["id"].as_str().unwrap().to_owned();
    let p = fixtures::create(&c, "processes", json!({"id": unique("proc"), "name": "slow", "initialContext": ["ms"],
        "steps": [{"id": "s", "tool": slow, "inputs": {"ms": "{{ms}}"}, "output": {"variable": "out"},
                   "execution": {"timeout": 300}}]})).await;
    let r = c
        .post(
            &format!("/v1/processes/{}/runs", p["id"].as_str().unwrap()),
            json!({"inputs": {"ms": 2000}}),
        )
        .await;
    let id = r.ok(202)["runId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let r = loop {
        let r = c.get(&format!("/v1/runs/{id}")).await.ok(200).clone();
        if r["status"] == "failed" || r["status"] == "completed" {
            break r;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(r["status"], "failed");
    assert_eq!(r["steps"][0]["error"]["code"], "TIMEOUT", "{r}");
    assert_eq!(r["steps"][0]["attempts"], 3, "timeouts are retried");
}
