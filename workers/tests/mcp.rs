//! `mcp_call` against a real MCP server built with `rmcp` (`aiden-mcp-fixture` from the
//! `aiden-tests` package), over stdio and over streamable HTTP.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use aiden_domain::service::Protocol;
use aiden_domain::tool::Operation;
use aiden_workers::executors::mcp_call::McpCall;
use aiden_workers::tool::{FailureClass, Invocation, Tool, ToolFailure, ToolOutput};
use serde_json::{json, Value};
use zeroize::Zeroizing;

/// The fixture binary of this checkout. Cargo does not build another package's binaries for
/// this package's tests, so it is built here once per test run (a no-op when fresh; a stale
/// binary would test old code). Cargo reports where it put the binary, which honours
/// `CARGO_TARGET_DIR`; the conventional path is the fallback when the build cannot run.
fn fixture() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let output = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "-p",
                "aiden-tests",
                "--bin",
                "aiden-mcp-fixture",
                "--message-format=json",
            ])
            .current_dir(&root)
            .stderr(Stdio::inherit())
            .output();
        if let Ok(output) = &output {
            assert!(output.status.success(), "building aiden-mcp-fixture failed");
            let built = String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|m| m["reason"] == "compiler-artifact")
                .filter(|m| m["target"]["name"] == "aiden-mcp-fixture")
                .find_map(|m| m["executable"].as_str().map(str::to_owned));
            if let Some(path) = built {
                return path;
            }
        }
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|t| if t.is_relative() { root.join(t) } else { t })
            .unwrap_or_else(|| root.join("target"));
        let path = target.join("debug/aiden-mcp-fixture");
        assert!(path.exists(), "no aiden-mcp-fixture at {}", path.display());
        path.to_string_lossy().into_owned()
    })
}

/// An HTTP fixture process, killed when the test ends.
struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn http_server(extra: &[&str]) -> HttpServer {
    let port = free_port();
    let child = Command::new(fixture())
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn aiden-mcp-fixture");
    let server = HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the MCP fixture did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

/// One call's settings; `call` builds the `Invocation` from them.
struct Call<'a> {
    idempotency_key: Option<&'a str>,
    protocol: Protocol,
    connection: Value,
    service_endpoint: Option<&'a str>,
    tool: &'a str,
    arguments: Value,
    input: Value,
    timeout: Duration,
    secret: Option<&'a str>,
}

impl<'a> Call<'a> {
    fn stdio(tool: &'a str, arguments: Value, input: Value) -> Self {
        Self {
            idempotency_key: None,
            protocol: Protocol::Stdio,
            connection: json!({"command": fixture()}),
            service_endpoint: None,
            tool,
            arguments,
            input,
            timeout: Duration::from_secs(20),
            secret: None,
        }
    }

    fn http(url: &str, tool: &'a str, arguments: Value, input: Value) -> Self {
        Self {
            protocol: Protocol::Http,
            connection: json!({"endpoint": url}),
            ..Self::stdio(tool, arguments, input)
        }
    }

    async fn run(&self, mcp: &McpCall) -> Result<ToolOutput, ToolFailure> {
        let operation = Operation::McpCall {
            tool_name: self.tool.to_owned(),
            arguments: self.arguments.clone(),
        };
        let secret = self.secret.map(|s| Zeroizing::new(s.to_owned()));
        let inv = Invocation {
            tool_id: "mcp-test",
            owner_id: "owner-under-test",
            idempotency_key: self.idempotency_key,
            operation: &operation,
            connection: &self.connection,
            service_endpoint: self.service_endpoint,
            protocol: self.protocol,
            secret: secret.as_ref(),
            secret_scope: None,
            input: &self.input,
            timeout: self.timeout,
            agent_turn: false,
            deltas: None,
        };
        mcp.call(&inv).await
    }
}

fn search(query: &str) -> (Value, Value) {
    (json!({"query": "{{query}}"}), json!({"query": query}))
}

fn assert_search(out: &ToolOutput, query: &str) {
    assert_eq!(
        out.value,
        json!({
            "content": [{"type": "text", "text": format!("results for {query}")}],
            "structuredContent": {"hits": [{"title": format!("{query} 1")}, {"title": format!("{query} 2")}]},
        })
    );
    assert_eq!(out.telemetry.provider.as_deref(), Some("mcp"));
    assert_eq!(out.telemetry.model, None);
}

/// `whoami`'s (pid, session number).
async fn whoami(mcp: &McpCall, call: &Call<'_>) -> Result<(u64, u64), ToolFailure> {
    let out = call.run(mcp).await?;
    let s = &out.value["structuredContent"];
    Ok((s["pid"].as_u64().unwrap(), s["session"].as_u64().unwrap()))
}

/// The step run's idempotency key reaches the server in the request's `_meta`, over stdio and
/// over streamable HTTP, the same on every call of that step run; no key, no entry.
#[tokio::test]
async fn the_idempotency_key_travels_in_the_requests_meta() {
    let mcp = McpCall::new();
    let server = http_server(&[]).await;
    for mut call in [
        Call::stdio("meta", json!({}), json!({})),
        Call::http(&server.url, "meta", json!({}), json!({})),
    ] {
        let plain = call.run(&mcp).await.expect("meta");
        assert!(plain.value["structuredContent"]
            .get(aiden_workers::executors::mcp_call::IDEMPOTENCY_META)
            .is_none());
        call.idempotency_key = Some("run-1/step-a");
        for _ in 0..2 {
            let out = call.run(&mcp).await.expect("meta");
            assert_eq!(
                out.value["structuredContent"]
                    [aiden_workers::executors::mcp_call::IDEMPOTENCY_META],
                json!("run-1/step-a"),
                "{}",
                out.value
            );
        }
    }
}

#[tokio::test]
async fn stdio_search_returns_content_and_structured_content() {
    let mcp = McpCall::new();
    let (arguments, input) = search("stdio graphs");
    let out = Call::stdio("search", arguments, input)
        .run(&mcp)
        .await
        .unwrap();
    assert_search(&out, "stdio graphs");
}

#[tokio::test]
async fn stdio_command_from_the_endpoint_and_the_input_as_arguments() {
    let mcp = McpCall::new();
    let endpoint = fixture();
    assert!(!endpoint.contains(char::is_whitespace), "{endpoint}");
    // No `connection.command`: the Service endpoint is the command line. Empty arguments:
    // the input object is passed as is.
    let call = Call {
        connection: json!({}),
        service_endpoint: Some(endpoint),
        ..Call::stdio("search", json!({}), json!({"query": "as is"}))
    };
    assert_search(&call.run(&mcp).await.unwrap(), "as is");
}

#[tokio::test]
async fn stdio_session_is_reused_and_replaced_once_the_server_dies() {
    let mcp = McpCall::new();
    let who = Call::stdio("whoami", json!({}), json!({}));
    let (pid, session) = whoami(&mcp, &who).await.unwrap();
    // A second call (even of another tool) goes to the same server process.
    let (arguments, input) = search("second");
    assert_search(
        &Call::stdio("search", arguments, input)
            .run(&mcp)
            .await
            .unwrap(),
        "second",
    );
    assert_eq!(whoami(&mcp, &who).await.unwrap(), (pid, session));

    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // The dead session is dropped: the next call reconnects, or (if it raced the server's
    // death) fails as a retryable connection error and the one after reconnects.
    let deadline = Instant::now() + Duration::from_secs(10);
    let new_pid = loop {
        match whoami(&mcp, &who).await {
            Ok((p, _)) => break p,
            Err(f) => assert_eq!(f.class, FailureClass::ConnectionError, "{f}"),
        }
        assert!(Instant::now() < deadline, "no new MCP session");
    };
    assert_ne!(new_pid, pid);
    assert_eq!(whoami(&mcp, &who).await.unwrap().0, new_pid);
}

#[tokio::test]
async fn streamable_http_search_reuses_one_session() {
    let server = http_server(&[]).await;
    let mcp = McpCall::new();
    let (arguments, input) = search("http graphs");
    assert_search(
        &Call::http(&server.url, "search", arguments, input)
            .run(&mcp)
            .await
            .unwrap(),
        "http graphs",
    );
    let who = Call::http(&server.url, "whoami", json!({}), json!({}));
    let first = whoami(&mcp, &who).await.unwrap();
    assert_eq!(first.0, server.child.id() as u64);
    assert_eq!(whoami(&mcp, &who).await.unwrap(), first, "a new session");
    // `sse` endpoints use the same streamable HTTP client (and here the same session).
    let sse = Call {
        protocol: Protocol::Sse,
        ..Call::http(&server.url, "whoami", json!({}), json!({}))
    };
    assert_eq!(whoami(&mcp, &sse).await.unwrap(), first);
    // Another executor instance has its own session with the server.
    let other = whoami(&McpCall::new(), &who).await.unwrap();
    assert_eq!(other.0, first.0);
    assert_ne!(other.1, first.1);
}

#[tokio::test]
async fn streamable_http_sends_the_secret_as_a_bearer_token() {
    let server = http_server(&["--token", "s3cret-token"]).await;
    let mcp = McpCall::new();
    let (arguments, input) = search("secured");
    let mut call = Call::http(&server.url, "search", arguments, input);
    call.secret = Some("s3cret-token");
    assert_search(&call.run(&mcp).await.unwrap(), "secured");

    for secret in [None, Some("wrong-token")] {
        call.secret = secret;
        let f = call.run(&mcp).await.unwrap_err();
        assert_eq!(f.class, FailureClass::AuthError, "{f}");
        assert!(!f.class.retryable());
        assert!(!f.message.contains("s3cret") && !f.message.contains("wrong-token"));
    }
}

#[tokio::test]
async fn is_error_result_is_a_tool_error() {
    let mcp = McpCall::new();
    let f = Call::stdio("fail", json!({}), json!({}))
        .run(&mcp)
        .await
        .unwrap_err();
    assert_eq!(f.class, FailureClass::ToolError, "{f}");
    assert!(!f.class.retryable());
    assert!(f.message.contains("deliberate failure"), "{}", f.message);
    assert_eq!(f.telemetry.provider.as_deref(), Some("mcp"));
}

#[tokio::test]
async fn unknown_tool_and_missing_variable_are_invalid_requests() {
    let mcp = McpCall::new();
    let f = Call::stdio("no_such_tool", json!({}), json!({}))
        .run(&mcp)
        .await
        .unwrap_err();
    assert_eq!(f.class, FailureClass::InvalidRequest, "{f}");
    assert!(!f.class.retryable());

    // Arguments of the wrong shape: rmcp servers answer with an `isError` result (MCP
    // reports input validation failures as tool errors), which fails the call as such.
    let f = Call::stdio("search", json!({"query": 7}), json!({}))
        .run(&mcp)
        .await
        .unwrap_err();
    assert_eq!(f.class, FailureClass::ToolError, "{f}");
    assert!(f.message.contains("invalid type"), "{}", f.message);

    // A variable the input lacks never reaches the server.
    let f = Call::stdio("search", json!({"query": "{{missing}}"}), json!({"q": 1}))
        .run(&mcp)
        .await
        .unwrap_err();
    assert_eq!(f.class, FailureClass::InvalidRequest, "{f}");
}

#[tokio::test]
async fn slow_call_beyond_the_timeout_is_a_timeout() {
    let mcp = McpCall::new();
    // Connect first, so the deadline below times the call itself.
    let who = Call::stdio("whoami", json!({}), json!({}));
    let before = whoami(&mcp, &who).await.unwrap();

    let mut slow = Call::stdio("slow", json!({"ms": "{{ms}}"}), json!({"ms": 5000}));
    slow.timeout = Duration::from_millis(300);
    let started = Instant::now();
    let f = slow.run(&mcp).await.unwrap_err();
    assert_eq!(f.class, FailureClass::Timeout, "{f}");
    assert!(f.class.retryable());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // Within the deadline the same tool answers, on the same session.
    let mut quick = Call::stdio("slow", json!({"ms": "{{ms}}"}), json!({"ms": 10}));
    quick.timeout = Duration::from_secs(10);
    let out = quick.run(&mcp).await.unwrap();
    assert_eq!(
        out.value["content"],
        json!([{"type": "text", "text": "slept"}])
    );
    assert_eq!(whoami(&mcp, &who).await.unwrap(), before);
}

#[tokio::test]
async fn unreachable_http_endpoint_is_a_connection_error() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let (arguments, input) = search("nobody");
    let call = Call {
        timeout: Duration::from_secs(10),
        ..Call::http(&url, "search", arguments, input)
    };
    let started = Instant::now();
    let f = call.run(&McpCall::new()).await.unwrap_err();
    assert_eq!(f.class, FailureClass::ConnectionError, "{f}");
    assert!(f.class.retryable());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn unstartable_stdio_command_is_a_connection_error() {
    let call = Call {
        connection: json!({"command": "/nonexistent/aiden-mcp-server", "args": ["--x"]}),
        ..Call::stdio("search", json!({}), json!({"query": "x"}))
    };
    let f = call.run(&McpCall::new()).await.unwrap_err();
    assert_eq!(f.class, FailureClass::ConnectionError, "{f}");
    assert!(
        f.message.contains("/nonexistent/aiden-mcp-server"),
        "{}",
        f.message
    );
}
