//! The scripted model (`aiden_tests::scripted_model`) as a process, for tests outside Rust (the
//! console's browser test): `aiden-scripted-model 127.0.0.1:PORT [FRAME_MS]` serves it there and
//! prints its base URL. FRAME_MS (default 15) paces streamed answers, so a browser can watch one.

use std::time::Duration;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let frame_ms: u64 = args.next().map_or(15, |f| f.parse().expect("FRAME_MS"));
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    let (_model, url) =
        aiden_tests::scripted_model::serve(listener, Duration::from_millis(frame_ms));
    println!("{url}");
    std::future::pending::<()>().await;
}
