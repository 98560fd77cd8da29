//! Process-wide HTTP counters for `/metrics` (Prometheus text format).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static BY_CLASS: [AtomicU64; 5] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];
static MICROS_TOTAL: AtomicU64 = AtomicU64::new(0);

pub fn record(status: u16, micros: u64) {
    let class = (status / 100).clamp(1, 5) as usize - 1;
    BY_CLASS[class].fetch_add(1, Relaxed);
    MICROS_TOTAL.fetch_add(micros, Relaxed);
}

pub fn render() -> String {
    let mut out = String::new();
    out.push_str("# HELP aiden_build_info Build information.\n# TYPE aiden_build_info gauge\n");
    out.push_str(&format!(
        "aiden_build_info{{version=\"{}\"}} 1\n",
        env!("CARGO_PKG_VERSION")
    ));
    out.push_str("# HELP aiden_http_requests_total HTTP requests handled, by status class.\n# TYPE aiden_http_requests_total counter\n");
    for (i, c) in BY_CLASS.iter().enumerate() {
        out.push_str(&format!(
            "aiden_http_requests_total{{class=\"{}xx\"}} {}\n",
            i + 1,
            c.load(Relaxed)
        ));
    }
    out.push_str("# HELP aiden_http_request_seconds_total Time spent handling HTTP requests.\n# TYPE aiden_http_request_seconds_total counter\n");
    out.push_str(&format!(
        "aiden_http_request_seconds_total {:.6}\n",
        MICROS_TOTAL.load(Relaxed) as f64 / 1e6
    ));
    out
}
