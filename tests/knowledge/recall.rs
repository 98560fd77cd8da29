//! Recall against real processes: the Graphiti service with its default embedder
//! (all-MiniLM-L6-v2 on this machine, no LLM: extraction off), `aiden serve` and the episode
//! pool. A corpus of facts, each in its own conversation (`recall_corpus.json`, checked by
//! `recall_corpus_check.py`: no question shares a content word with its fact), is ingested
//! through the API; then paraphrased questions are searched and the recall@5 and MRR printed.
//! Isolation (SRCH-2, SRCH-3) is checked with content that would otherwise rank first.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use aiden_tests::procs::{sigkill, spawn_env, Api};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{drop_vhost, query_value, root, section_tokens};

#[derive(Deserialize)]
struct Corpus {
    facts: Vec<Fact>,
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct Fact {
    id: String,
    message: String,
    filler: Option<String>,
}

#[derive(Deserialize)]
struct Question {
    fact: String,
    question: String,
}

pub(super) async fn ok(
    api: &Api,
    method: Method,
    path: &str,
    body: Option<Value>,
    status: u16,
) -> Value {
    let (s, b) = api.call(method, path, body).await;
    assert_eq!(s, status, "{path}: {b}");
    b
}

fn as_user(admin: &Api, token: &str) -> Api {
    Api {
        http: admin.http.clone(),
        base: admin.base.clone(),
        token: token.to_owned(),
    }
}

pub(super) async fn new_user(admin: &Api) -> (String, Api) {
    let id = aiden_tests::unique("recall");
    let b = ok(
        admin,
        Method::POST,
        "/v1/users",
        Some(json!({"id": id, "name": id, "role": "user"})),
        201,
    )
    .await;
    (id, as_user(admin, b["token"].as_str().unwrap()))
}

pub(super) async fn conversation(api: &Api, title: &str) -> String {
    let c = ok(
        api,
        Method::POST,
        "/v1/conversations",
        Some(json!({ "title": title })),
        201,
    )
    .await;
    c["id"].as_str().unwrap().to_owned()
}

/// A user Turn (after `parent`, when given): its Turn id and first Alternative's id.
pub(super) async fn say(
    api: &Api,
    c: &str,
    text: &str,
    parent: Option<(&str, &str)>,
) -> (String, String) {
    let mut body = json!({"speaker": "user", "content": text});
    if let Some((t, a)) = parent {
        body["parentTurnId"] = t.into();
        body["parentAlternativeId"] = a.into();
    }
    let t = ok(
        api,
        Method::POST,
        &format!("/v1/conversations/{c}/turns"),
        Some(body),
        201,
    )
    .await;
    let id = |v: &Value| v.as_str().unwrap().to_owned();
    (id(&t["id"]), id(&t["alternatives"][0]["id"]))
}

/// Waits until every Alternative in `ids` is bound and embedded.
pub(super) async fn wait_embedded(graph: &aiden_graph::Graph, ids: &[String], within: Duration) {
    #[derive(Deserialize)]
    struct Row {
        n: i64,
    }
    let deadline = Instant::now() + within;
    loop {
        let q = neo4rs::query(
            "MATCH (a:Alternative) WHERE a.id IN $ids AND a:Embedded AND a.binding IN ['skipped', 'extracted'] \
             RETURN count(a) AS n",
        )
        .param("ids", ids.to_vec());
        let rows: Vec<Row> = graph.read_rows(q).await.expect("count embedded");
        let n = rows.first().map_or(0, |r| r.n);
        if n == ids.len() as i64 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{n} of {} alternatives embedded",
            ids.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub(super) async fn search(api: &Api, q: &str, extra: &str) -> Value {
    ok(
        api,
        Method::GET,
        &format!("/v1/search?q={}{extra}", query_value(q)),
        None,
        200,
    )
    .await
}

fn hit_ids(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srch_1_2_3_paraphrased_questions_find_their_fact_and_never_another_users_or_a_sibling_branch(
) {
    let _serial = super::SERIAL.lock().await;
    // Not beside the Episode tests' processes (one engine lease, one relay per database).
    super::episodes::retire();
    let corpus: Corpus = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/knowledge/recall_corpus.json")).unwrap(),
    )
    .unwrap();
    assert!(corpus.facts.len() >= 50 && corpus.questions.len() >= 20);
    let procs = super::recall_procs().await;
    let (admin, graph, port, extra) = (&procs.admin, &procs.graph, procs.port, &procs.extra);
    let mut episodes = procs.episodes;

    // The corpus: each fact in a conversation of its own (A's), a filler message after it.
    let (_, a) = new_user(admin).await;
    let (_, b) = new_user(admin).await;
    let mut fact_alt: HashMap<String, String> = HashMap::new();
    let mut all = Vec::new();
    for f in &corpus.facts {
        let c = conversation(&a, &format!("corpus {}", f.id)).await;
        let (t, alt) = say(&a, &c, &f.message, None).await;
        all.push(alt.clone());
        if let Some(filler) = &f.filler {
            all.push(say(&a, &c, filler, Some((&t, &alt))).await.1);
        }
        fact_alt.insert(f.id.clone(), alt);
    }
    // SRCH-2: B says, word for word, the first question: it would rank first for anyone.
    let first = &corpus.questions[0];
    let bc = conversation(&b, "someone else").await;
    let (_, b_alt) = say(&b, &bc, &first.question, None).await;
    all.push(b_alt.clone());
    // SRCH-3: in A's conversation x, the first Turn's inactive sibling says the second question
    // word for word; the path goes on from the active one.
    let second = &corpus.questions[1];
    let x = conversation(&a, "branches").await;
    let (t1, a1) = say(&a, &x, "Let me tell you about my week.", None).await;
    let sibling = ok(
        &a,
        Method::POST,
        &format!("/v1/turns/{t1}/alternatives"),
        Some(json!({ "content": second.question })),
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(
        &a,
        Method::PUT,
        &format!("/v1/turns/{t1}/active"),
        Some(json!({ "alternativeId": a1 })),
        200,
    )
    .await;
    let (_, asked) = say(&a, &x, &second.question, Some((&t1, &a1))).await;
    all.extend([a1.clone(), sibling.clone(), asked.clone()]);
    wait_embedded(graph, &all, Duration::from_secs(300)).await;

    // Content bound without an embedding (before recall existed, or its embedding failed) is
    // embedded when an episode pool starts.
    let stripped = fact_alt[&corpus.facts[0].id].clone();
    graph
        .run_autocommit(
            neo4rs::query(
                "MATCH (a:Alternative {id: $id}) \
                 REMOVE a:Embedded, a.embedding, a.embeddedWith, a.embeddedRevision",
            )
            .param("id", stripped.as_str()),
        )
        .await
        .expect("strip an embedding");
    sigkill(&mut episodes);
    let _episodes = spawn_env(&["worker", "--type", "episode"], port, extra);
    wait_embedded(
        graph,
        std::slice::from_ref(&stripped),
        Duration::from_secs(120),
    )
    .await;

    // Recall@5 and MRR (over the top 10) of the paraphrases, as A.
    let mut found = 0usize;
    let mut reciprocal = 0.0f64;
    let mut misses = Vec::new();
    let started = Instant::now();
    for q in &corpus.questions {
        let answer = search(&a, &q.question, "&kinds=episode&limit=10").await;
        let ids = hit_ids(&answer);
        assert!(
            !ids.contains(&b_alt),
            "SRCH-2: B's content in A's search: {answer}"
        );
        let want = &fact_alt[&q.fact];
        match ids.iter().position(|id| id == want) {
            Some(i) => {
                reciprocal += 1.0 / (i as f64 + 1.0);
                if i < 5 {
                    found += 1;
                } else {
                    misses.push(format!("{} (rank {})", q.question, i + 1));
                }
            }
            None => {
                let top: Vec<String> = answer["hits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .take(2)
                    .map(|h| {
                        format!(
                            "{} sim {} text {}",
                            h["text"], h["similarity"], h["textScore"]
                        )
                    })
                    .collect();
                misses.push(format!("{} (not in the top 10; top: {top:?})", q.question))
            }
        }
    }
    let n = corpus.questions.len() as f64;
    let recall5 = found as f64 / n;
    println!(
        "recall: {} questions over {} facts ({} documents): recall@5 {:.3}, MRR {:.3}, {:.0} ms per search; misses: {misses:?}",
        corpus.questions.len(),
        corpus.facts.len(),
        all.len(),
        recall5,
        reciprocal / n,
        started.elapsed().as_secs_f64() * 1000.0 / n
    );
    assert!(recall5 >= 0.9, "recall@5 {recall5:.3} < 0.9: {misses:?}");

    // Provenance: the hit names its conversation, Turn and Alternative, active on its Turn.
    let answer = search(&a, &first.question, "&kinds=episode&limit=3").await;
    let top = &answer["hits"][0];
    assert_eq!(top["kind"], "episode", "{answer}");
    assert!(top["conversationId"].is_string() && top["turnId"].is_string());
    assert_eq!(top["alternativeId"], top["id"]);
    assert_eq!(top["activeBranch"], true);
    assert!(top["similarity"].as_f64().unwrap() > 0.0);
    assert_eq!(answer["signals"][0], "vector", "{answer}");
    // B finds its own message first: it would have ranked first for A too.
    let theirs = search(&b, &first.question, "&kinds=episode").await;
    assert_eq!(hit_ids(&theirs).first(), Some(&b_alt), "{theirs}");
    // Another user's conversation is not found (OWN-2: 404), bad input is SRCH-1 (422).
    let (s, body) = a
        .call(
            Method::GET,
            &format!("/v1/search?q=x&conversationId={bc}"),
            None,
        )
        .await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND"))
    );
    for bad in [
        "/v1/search?q=",
        "/v1/search?q=x&kinds=pets",
        "/v1/search?q=x&limit=99",
    ] {
        let (s, body) = a.call(Method::GET, bad, None).await;
        assert_eq!(s, 422, "{bad}: {body}");
        assert!(body.to_string().contains("SRCH-1"), "{bad}: {body}");
    }

    // SRCH-3: the sibling ranks first in a search of x (shown as not on the active branch)...
    let in_x = search(
        &a,
        &second.question,
        &format!("&conversationId={x}&limit=5"),
    )
    .await;
    let sib = in_x["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == sibling.as_str())
        .unwrap_or_else(|| panic!("the sibling is searchable: {in_x}"));
    assert_eq!(sib["activeBranch"], false, "{in_x}");
    // ...but working memory at the question never carries it, nor B's words, while it does
    // carry the fact the question is about, from A's other conversation.
    let wm = ok(
        &a,
        Method::GET,
        &format!("/v1/conversations/{x}/working-memory?alternativeId={asked}"),
        None,
        200,
    )
    .await;
    let retrieved = wm["retrievedContext"].as_array().expect("retrievedContext");
    let sources: HashSet<&str> = retrieved
        .iter()
        .filter_map(|r| r["source"]["alternativeId"].as_str())
        .collect();
    assert!(!sources.contains(sibling.as_str()), "SRCH-3: {wm}");
    assert!(!sources.contains(b_alt.as_str()), "SRCH-2: {wm}");
    assert!(
        sources.contains(fact_alt[&second.fact].as_str()),
        "the fact is retrieved: {wm}"
    );
    let scores: Vec<f64> = retrieved
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "by similarity: {scores:?}"
    );
    let path_tokens = section_tokens(&wm["immediatePath"], "tokens");
    let retrieved_tokens = section_tokens(&wm["retrievedContext"], "tokens");
    assert!(retrieved_tokens > 0 && retrieved_tokens <= 400);
    assert_eq!(
        wm["totalTokens"].as_u64().unwrap(),
        path_tokens + retrieved_tokens,
        "WM-2: {wm}"
    );
    drop_vhost(&procs.vhost);
}
