//! `aiden apply -f PATH…`: loads definitions through the HTTP API (so every invariant applies),
//! creating what is missing and updating what differs; prints what changed. Idempotent: the
//! server bumps a resource's `revision` only when something changed, and that is what we report.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context};
use clap::Args;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;

#[derive(Args)]
pub struct ApplyArgs {
    /// Files or folders (searched recursively for .yaml, .yml, .json).
    #[arg(short = 'f', long = "file", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[arg(long, env = "AIDEN_SERVER", default_value = "http://127.0.0.1:8080")]
    pub server: String,
    #[arg(long, env = "AIDEN_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Also rotate existing Secrets to the value in the file (values are never compared).
    #[arg(long)]
    pub rotate_secrets: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    kind: Kind,
    spec: Value,
    /// Applied only when this is a non-empty string after substitution, e.g.
    /// `when: "${AIDEN_LLM_API_KEY:+yes}"`: a definition that exists only in some setups.
    #[serde(default)]
    when: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
enum Kind {
    ServiceTemplate,
    ToolTemplate,
    Secret,
    Service,
    Tool,
    Process,
}

impl Kind {
    fn collection(self) -> &'static str {
        match self {
            Kind::ServiceTemplate => "service-templates",
            Kind::ToolTemplate => "tool-templates",
            Kind::Secret => "secrets",
            Kind::Service => "services",
            Kind::Tool => "tools",
            Kind::Process => "processes",
        }
    }
}

pub async fn run(args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let mut docs = Vec::new();
    for path in files(&args.files)? {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let text = substitute_env(&text, |k| std::env::var(k).ok())
            .with_context(|| format!("in {}", path.display()))?;
        for de in serde_yaml_ng::Deserializer::from_str(&text) {
            let value =
                Value::deserialize(de).with_context(|| format!("parsing {}", path.display()))?;
            if value.is_null() {
                continue;
            }
            let doc: Document = serde_json::from_value(value)
                .with_context(|| format!("in {}: expected {{kind, spec}}", path.display()))?;
            if doc.when.as_deref().is_some_and(str::is_empty) {
                continue;
            }
            if doc.spec.get("id").and_then(Value::as_str).is_none() {
                bail!(
                    "in {}: every {:?} needs an explicit spec.id so apply can find it again",
                    path.display(),
                    doc.kind
                );
            }
            docs.push(doc);
        }
    }
    let docs = order(docs)?;
    let client = reqwest::Client::new();
    let api = Api {
        client: &client,
        base: args.server.trim_end_matches('/'),
        token: &args.token,
    };
    let (mut created, mut updated, mut unchanged) = (0, 0, 0);
    for doc in &docs {
        let id = doc.spec["id"].as_str().unwrap_or_default();
        let outcome = apply_one(&api, doc, args.rotate_secrets)
            .await
            .with_context(|| format!("{:?} {id}", doc.kind))?;
        match outcome {
            Outcome::Created => created += 1,
            Outcome::Updated => updated += 1,
            Outcome::Unchanged => unchanged += 1,
        }
        println!("{:<9} {:?} {id}", outcome.word(), doc.kind);
    }
    println!("apply: {created} created, {updated} updated, {unchanged} unchanged");
    Ok(ExitCode::SUCCESS)
}

enum Outcome {
    Created,
    Updated,
    Unchanged,
}

impl Outcome {
    fn word(&self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
        }
    }
}

struct Api<'a> {
    client: &'a reqwest::Client,
    base: &'a str,
    token: &'a str,
}

impl Api<'_> {
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(StatusCode, Value)> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(self.token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let res = req
            .send()
            .await
            .with_context(|| format!("calling {}{path}", self.base))?;
        let status = res.status();
        let value = res.json::<Value>().await.unwrap_or(Value::Null);
        Ok((status, value))
    }
}

async fn apply_one(api: &Api<'_>, doc: &Document, rotate_secrets: bool) -> anyhow::Result<Outcome> {
    let id = doc.spec["id"].as_str().unwrap_or_default();
    let path = format!("/v1/{}/{id}", doc.kind.collection());
    let (status, current) = api.call(Method::GET, &path, None).await?;
    match status {
        StatusCode::NOT_FOUND => {
            let (status, body) = api
                .call(
                    Method::POST,
                    &format!("/v1/{}", doc.kind.collection()),
                    Some(&doc.spec),
                )
                .await?;
            expect(status, &body, StatusCode::CREATED)?;
            Ok(Outcome::Created)
        }
        StatusCode::OK => {
            let mut spec = doc.spec.clone();
            if doc.kind == Kind::Secret {
                // Values are write-only; rotate only when asked.
                let keep_value = rotate_secrets;
                let obj = spec.as_object_mut().context("spec must be an object")?;
                obj.retain(|k, _| k == "name" || (keep_value && k == "value"));
            }
            let method = if doc.kind == Kind::Process {
                Method::PUT
            } else {
                Method::PATCH
            };
            let (status, body) = api.call(method, &path, Some(&spec)).await?;
            expect(status, &body, StatusCode::OK)?;
            if body.get("revision") == current.get("revision") {
                Ok(Outcome::Unchanged)
            } else {
                Ok(Outcome::Updated)
            }
        }
        _ => {
            expect(status, &current, StatusCode::OK)?;
            unreachable!("expect returns Err for other statuses")
        }
    }
}

fn expect(status: StatusCode, body: &Value, want: StatusCode) -> anyhow::Result<()> {
    if status == want {
        return Ok(());
    }
    let err = &body["error"];
    let mut msg = format!(
        "{status}: {}",
        err["message"].as_str().unwrap_or("no error body")
    );
    for d in err["details"].as_array().into_iter().flatten() {
        msg.push_str(&format!(
            "\n  [{}] {} {}",
            d["invariant"].as_str().unwrap_or("-"),
            d["path"].as_str().unwrap_or(""),
            d["message"].as_str().unwrap_or("")
        ));
    }
    bail!(msg)
}

/// Kinds in dependency order; Processes after the Processes they call.
fn order(mut docs: Vec<Document>) -> anyhow::Result<Vec<Document>> {
    docs.sort_by_key(|d| d.kind);
    let split = docs
        .iter()
        .position(|d| d.kind == Kind::Process)
        .unwrap_or(docs.len());
    let processes = docs.split_off(split);
    let ids: BTreeSet<String> = processes
        .iter()
        .filter_map(|d| d.spec["id"].as_str().map(str::to_owned))
        .collect();
    let mut pending: BTreeMap<String, Document> = processes
        .into_iter()
        .map(|d| (d.spec["id"].as_str().unwrap_or_default().to_owned(), d))
        .collect();
    let mut placed: BTreeSet<String> = BTreeSet::new();
    while !pending.is_empty() {
        let ready: Vec<String> = pending
            .iter()
            .filter(|(_, d)| {
                d.spec["steps"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s["process"].as_str())
                    .all(|c| !ids.contains(c) || placed.contains(c))
            })
            .map(|(id, _)| id.clone())
            .collect();
        if ready.is_empty() {
            bail!(
                "these Processes call each other in a cycle: {:?}",
                pending.keys().collect::<Vec<_>>()
            );
        }
        for id in ready {
            if let Some(d) = pending.remove(&id) {
                docs.push(d);
                placed.insert(id);
            }
        }
    }
    Ok(docs)
}

fn files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        collect(p, &mut out).with_context(|| format!("reading {}", p.display()))?;
    }
    Ok(out)
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            collect(&e, out)?;
        }
    } else if matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    ) {
        out.push(path.to_owned());
    } else if !path.exists() {
        bail!("no such file or folder");
    }
    Ok(())
}

/// `${VAR}` and `${VAR:-default}` (the default also applies when VAR is empty),
/// `${VAR:+word}` (word when VAR is set and not empty, else nothing); `$$` is `$`.
pub fn substitute_env(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut missing = Vec::new();
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').context("unterminated ${")?;
            let expr = &body[..end];
            if let Some((name, word)) = expr.split_once(":+") {
                if lookup(name).is_some_and(|v| !v.is_empty()) {
                    out.push_str(word);
                }
                rest = &body[end + 1..];
                continue;
            }
            let (name, default) = match expr.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (expr, None),
            };
            match (lookup(name).filter(|v| !v.is_empty()), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => missing.push(name.to_owned()),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !missing.is_empty() {
        bail!("environment variable(s) not set: {}", missing.join(", "));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_with_defaults_and_reports_missing() {
        let env = |k: &str| (k == "SET").then(|| "v".to_owned());
        assert_eq!(
            substitute_env("a ${SET} ${UNSET:-d} $$x $q", env).unwrap(),
            "a v d $x $q"
        );
        assert!(substitute_env("${UNSET}", env).is_err());
        assert_eq!(
            substitute_env("[${SET:+yes}] [${UNSET:+yes}]", env).unwrap(),
            "[yes] []"
        );
    }
}
