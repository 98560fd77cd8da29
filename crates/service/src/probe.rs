//! Health probes that touch the endpoint for real: a Bolt handshake, an HTTP request, or the
//! executable of a stdio MCP server.

use std::time::Duration;

use aiden_domain::service::{HealthStatus, Protocol};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::timeout,
};

const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) async fn probe(
    http: &reqwest::Client,
    protocol: Protocol,
    endpoint: Option<&str>,
) -> (HealthStatus, Option<String>) {
    let Some(endpoint) = endpoint else {
        return (
            HealthStatus::Degraded,
            Some("no endpoint configured to probe".into()),
        );
    };
    let outcome = match protocol {
        Protocol::Bolt | Protocol::BoltS => bolt(endpoint, protocol == Protocol::Bolt).await,
        Protocol::Http | Protocol::Https | Protocol::Sse => http_probe(http, endpoint).await,
        Protocol::Stdio => executable(endpoint),
    };
    match outcome {
        Ok(None) => (HealthStatus::Healthy, None),
        Ok(Some(warning)) => (HealthStatus::Degraded, Some(warning)),
        Err(e) => (HealthStatus::Down, Some(e)),
    }
}

fn host_port(endpoint: &str, default_port: u16) -> Result<String, String> {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return Err(format!("cannot read a host from '{endpoint}'"));
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
    Ok(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    })
}

/// Bolt: the 4-byte magic and four version proposals; a server answers a non-zero version.
/// `bolt+s` needs TLS first, so for it a TCP connection is all we check (reported degraded).
async fn bolt(endpoint: &str, plain: bool) -> Result<Option<String>, String> {
    let addr = host_port(endpoint, 7687)?;
    let mut stream = timeout(PROBE_TIMEOUT, TcpStream::connect(&addr))
        .await
        .map_err(|_| format!("timed out connecting to {addr}"))?
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    if !plain {
        return Ok(Some("TCP reachable; TLS Bolt handshake not probed".into()));
    }
    let hello: [u8; 20] = [
        0x60, 0x60, 0xB0, 0x17, // magic
        0x00, 0x04, 0x04, 0x05, // 5.0-5.4
        0x00, 0x00, 0x04, 0x04, // 4.4
        0x00, 0x00, 0x03, 0x04, // 4.3
        0x00, 0x00, 0x00, 0x03, // 3
    ];
    let exchange = async {
        stream.write_all(&hello).await?;
        let mut answer = [0u8; 4];
        stream.read_exact(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = timeout(PROBE_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("{addr} did not answer the Bolt handshake"))?
        .map_err(|e| format!("Bolt handshake with {addr} failed: {e}"))?;
    if answer == [0, 0, 0, 0] {
        Err(format!(
            "{addr} speaks Bolt but accepts none of our protocol versions"
        ))
    } else {
        Ok(None)
    }
}

async fn http_probe(http: &reqwest::Client, endpoint: &str) -> Result<Option<String>, String> {
    let response = http.get(endpoint).send().await.map_err(|e| {
        if e.is_timeout() {
            format!("timed out requesting {endpoint}")
        } else {
            format!(
                "cannot reach {endpoint}: {}",
                std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string())
            )
        }
    })?;
    let status = response.status();
    if status.is_server_error() {
        Ok(Some(format!("{endpoint} answered {status}")))
    } else {
        Ok(None)
    }
}

/// A stdio MCP server's endpoint is its command line; healthy when the program can be found.
fn executable(command: &str) -> Result<Option<String>, String> {
    let program = command.split_whitespace().next().ok_or("empty command")?;
    let found = if program.contains('/') {
        std::path::Path::new(program).is_file()
    } else {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
    };
    if found {
        Ok(None)
    } else {
        Err(format!("program '{program}' not found"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_reads_uris() {
        assert_eq!(host_port("bolt://db:7688", 7687).unwrap(), "db:7688");
        assert_eq!(host_port("bolt://u:p@db", 7687).unwrap(), "db:7687");
        assert_eq!(
            host_port("neo4j.local/x", 7687).unwrap(),
            "neo4j.local:7687"
        );
    }
}
