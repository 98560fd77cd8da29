//! CPU seconds per part of the stack during a scenario (where a step's CPU goes):
//! user + system time of every process on the machine, read from `/proc`, grouped by what it
//! is (graph, broker, engine, workers, nginx, client) and differenced across the scenario.
//! `other` is whatever else ran meanwhile (this machine is shared), so a noisy window shows.
//! `graph_jit` is the part of `graph` spent in the JVM's JIT compiler threads: until the JVM has
//! compiled its hot paths (tens of thousands of statements after a start), compiling costs the
//! graph server as much CPU as the statements themselves, and this says how warm a run was.

use std::collections::BTreeMap;

/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ; 100 on every Linux this runs on).
const TICKS_PER_S: f64 = 100.0;

/// Thread names (`comm`, cut to 15 bytes) of HotSpot's C1 and C2 compiler threads.
const JIT_THREAD_PREFIXES: [&str; 2] = ["C1 CompilerThre", "C2 CompilerThre"];

/// CPU ticks per group at one moment (exited processes are not counted).
pub struct Sample(BTreeMap<&'static str, u64>);

fn group(pid: u32, cmdline: &str, comm: &str) -> &'static str {
    if pid == std::process::id() {
        "client"
    } else if cmdline.contains("CommunityEntryPoint") && !cmdline.contains(".stack/neo4j-test") {
        // The graph the benchmark drives (the tests' own instance, if it runs, is `other`).
        "graph"
    } else if comm == "beam.smp" || cmdline.contains("rabbit") {
        "broker"
    } else if cmdline.contains("aiden\0serve") || cmdline.contains("aiden serve") {
        "engine"
    } else if cmdline.contains("aiden\0worker") {
        "workers"
    } else if comm == "nginx" {
        "nginx"
    } else {
        "other"
    }
}

/// CPU ticks of a process's JIT compiler threads (threads that exited are not counted).
fn jit_ticks(process: &std::path::Path) -> u64 {
    let Ok(tasks) = std::fs::read_dir(process.join("task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .filter_map(|stat| ticks(&stat))
        .filter(|(comm, _)| JIT_THREAD_PREFIXES.iter().any(|p| comm.starts_with(p)))
        .map(|(_, t)| t)
        .sum()
}

/// utime + stime of one process; `comm` may hold spaces and parentheses, so fields are counted
/// from the last `)`.
fn ticks(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = stat.get(close + 2..)?.split(' ').collect();
    // Fields after the comm start at `state` (field 3): utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

impl Sample {
    pub fn now() -> Self {
        let mut totals = BTreeMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Self(totals);
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let path = entry.path();
            let Some((comm, t)) = std::fs::read_to_string(path.join("stat"))
                .ok()
                .and_then(|s| ticks(&s))
            else {
                continue;
            };
            let cmdline = std::fs::read_to_string(path.join("cmdline")).unwrap_or_default();
            let cmdline = cmdline.trim_end_matches('\0');
            let group = group(pid, cmdline, &comm);
            *totals.entry(group).or_default() += t;
            if group == "graph" {
                *totals.entry("graph_jit").or_default() += jit_ticks(&path);
            }
        }
        Self(totals)
    }

    /// CPU seconds each group used since `earlier`, as a JSON object (processes that started
    /// meanwhile count whole; ones that exited are missing from both ends).
    pub fn since(&self, earlier: &Sample) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for (name, t) in &self.0 {
            let before = earlier.0.get(name).copied().unwrap_or(0);
            let s = t.saturating_sub(before) as f64 / TICKS_PER_S;
            out.insert(
                (*name).to_owned(),
                serde_json::json!((s * 100.0).round() / 100.0),
            );
        }
        serde_json::Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utime_and_stime_past_a_comm_with_spaces() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1 0 0";
        assert_eq!(ticks(stat), Some(("a b) c".to_owned(), 300)));
    }

    #[test]
    fn counts_only_the_compiler_threads_as_jit() {
        let process = std::env::temp_dir().join(format!("aiden-bench-jit-{}", std::process::id()));
        let threads = [
            (
                "1",
                "1 (java) S 1 1 1 0 -1 0 0 0 0 0 700 100 0 0 20 0 1 0 1 0 0",
            ),
            (
                "2",
                "2 (C2 CompilerThre) S 1 1 1 0 -1 0 0 0 0 0 300 10 0 0 20 0 1 0 1 0 0",
            ),
            (
                "3",
                "3 (C1 CompilerThre) S 1 1 1 0 -1 0 0 0 0 0 40 2 0 0 20 0 1 0 1 0 0",
            ),
        ];
        for (tid, stat) in threads {
            let dir = process.join("task").join(tid);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("stat"), stat).unwrap();
        }
        assert_eq!(jit_ticks(&process), 352);
        std::fs::remove_dir_all(&process).unwrap();
    }

    #[test]
    fn groups_the_stack_by_command_line() {
        assert_eq!(
            group(
                1,
                "java\0org.neo4j.server.CommunityEntryPoint\0--home-dir=/r/.stack/neo4j",
                "java"
            ),
            "graph"
        );
        assert_eq!(
            group(
                1,
                "java\0org.neo4j.server.CommunityEntryPoint\0--home-dir=/r/.stack/neo4j-test",
                "java"
            ),
            "other"
        );
        assert_eq!(group(1, "/usr/lib/erlang/beam.smp", "beam.smp"), "broker");
        assert_eq!(group(1, "target/release/aiden\0serve", "aiden"), "engine");
        assert_eq!(
            group(1, "target/release/aiden\0worker\0--type", "aiden"),
            "workers"
        );
        assert_eq!(group(1, "nginx: worker process", "nginx"), "nginx");
        assert_eq!(group(std::process::id(), "", "x"), "client");
    }
}
