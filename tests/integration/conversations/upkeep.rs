//! Memory upkeep: compression when working memory passes its budget (MEM-6), the
//! introspection carousel (INT-1, MEM-2), entity enrichment (MEM-4, ENT-4) and the settings'
//! rules (MEM-1..5). The upkeep loop ticks in the test server; the model is the scripted
//! OpenAI-compatible server.

use aiden_tests::{admin, graph_write, scripted_model, user};
use tokio::sync::{Mutex as AsyncMutex, MutexGuard};

use super::*;

/// An llm_call Tool on the scripted model and a Process whose one step sends it `message`.
async fn scripted_process(u: &Client, message: &str, context: &[&str], shared: bool) -> String {
    let (_model, base) = scripted_model::start().await;
    let secret = fixtures::secret(u, "sk-upkeep-test").await;
    let svc = id(&fixtures::create(
        u,
        "services",
        json!({"id": unique("svc"), "name": "LLM", "type": "llm_provider", "protocol": "http",
               "requiresSecret": true, "enabled": true, "shared": shared,
               "connectionSchema": {"type": "object", "required": ["endpoint", "model"],
               "properties": {"endpoint": {"type": "string"}, "model": {"type": "string"}}}}),
    )
    .await);
    let tool = id(&fixtures::create(
        u,
        "tools",
        json!({"id": unique("model"), "name": "model", "serviceId": svc, "secretId": secret,
               "shared": shared,
               "connectionParams": {"endpoint": base, "model": "scripted"},
               "operation": {"type": "llm_call", "api": "openai", "promptTemplate": "{{message}}"},
               "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
               "outputSchema": {"type": "object"}}),
    )
    .await);
    id(&fixtures::create(
        u,
        "processes",
        json!({"id": unique("upkeep"), "name": "upkeep", "shared": shared, "enabled": true,
               "initialContext": context,
               "steps": [{"id": "llm", "tool": tool, "inputs": {"message": message},
                          "output": {"variable": "r", "required": true},
                          "execution": {"mode": "sequential", "timeout": 20000}}],
               "outputTemplate": "{{r.text}}"}),
    )
    .await)
}

/// The settings are one global node. A test that changes them holds this lock until it has put
/// the node back exactly as it was: through the graph, since PATCH would refuse (MEM-5) default
/// Process ids that name unseeded Processes, as on a fresh stack.
static SETTINGS: AsyncMutex<()> = AsyncMutex::const_new(());

struct SavedSettings {
    _lock: MutexGuard<'static, ()>,
    node: Option<(String, i64)>,
}

#[derive(serde::Deserialize)]
struct SettingsRow {
    doc: String,
    #[serde(rename = "maxRotation")]
    max_rotation: i64,
}

async fn save_settings() -> SavedSettings {
    let lock = SETTINGS.lock().await;
    let rows: Vec<SettingsRow> = graph_rows(aiden_graph_query(
        "MATCH (s:MemorySettings {id: 'memory'}) RETURN s.doc AS doc, s.maxRotation AS maxRotation",
    ))
    .await;
    SavedSettings {
        _lock: lock,
        node: rows.into_iter().next().map(|r| (r.doc, r.max_rotation)),
    }
}

async fn restore_settings(saved: SavedSettings) {
    let q = match &saved.node {
        None => aiden_graph_query("MATCH (s:MemorySettings {id: 'memory'}) DETACH DELETE s"),
        Some((doc, max_rotation)) => aiden_graph_query(
            "MATCH (s:MemorySettings {id: 'memory'}) \
             SET s.doc = $doc, s.maxRotation = $maxRotation, s.revision = s.revision + 1",
        )
        .param("doc", doc.as_str())
        .param("maxRotation", *max_rotation),
    };
    graph_write(q).await;
}

/// A script the model answers with `answer` (Handlebars still fills `{{…}}` in it).
fn script(answer: &str) -> String {
    format!(
        "script:[{{\"answer\": {}}}]",
        serde_json::to_string(answer).unwrap()
    )
}

/// ~25 tokens of distinct text.
fn line(i: usize) -> String {
    format!("turn {i:03}: a message long enough to matter for the budget here.....")
}

async fn summaries(u: &Client, c: &str) -> Vec<Value> {
    u.get(&format!("/v1/conversations/{c}/summaries"))
        .await
        .ok(200)["items"]
        .as_array()
        .unwrap()
        .clone()
}

async fn wait_for<F, Fut>(what: &str, within: Duration, mut probe: F) -> Value
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<Value>>,
{
    let until = Instant::now() + within;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < until, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the upkeep loop has finished `n` more ticks (its "tick done" log lines): a
/// barrier instead of a sleep, whatever the machine's load.
async fn upkeep_ticks(n: usize) {
    let done = || {
        aiden_tests::server()
            .logs()
            .matches("memory upkeep tick done")
            .count()
    };
    let target = done() + n;
    let deadline = Instant::now() + Duration::from_secs(60);
    while done() < target {
        assert!(Instant::now() < deadline, "the upkeep loop stopped ticking");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn runs_of(u: &Client, process: &str) -> Vec<Value> {
    u.get(&format!("/v1/runs?processId={process}"))
        .await
        .ok(200)["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// A chain of `n` user Turns after `parent`; returns the Turns.
async fn chain(u: &Client, c: &str, from: usize, n: usize, parent: Option<String>) -> Vec<Value> {
    let mut parent = parent;
    let mut turns = Vec::new();
    for i in from..from + n {
        let t = say(u, c, &line(i), parent.as_deref()).await;
        parent = Some(id(&t));
        turns.push(t);
    }
    turns
}

/// MEM-6 / SUM-1 / WM-3: a conversation over its budget gets one compression run (not two,
/// even with 20 concurrent appends), whose Summary replaces the covered span in working
/// memory; a branch that leaves the covered path does not use it.
#[tokio::test]
async fn mem_6_sum_1_wm_3_one_compression_replaces_the_span_and_only_on_its_own_path() {
    let u = user().await;
    let process = scripted_process(
        &u,
        &script("compressed {{sourceTokens}} tokens"),
        &["conversationId", "sourceTokens"],
        false,
    )
    .await;
    let c = conversation(&u).await;
    u.patch(
        &format!("/v1/conversations/{c}"),
        json!({"compressionTokenBudget": 100000, "compressionProcessId": process}),
    )
    .await
    .ok(200);
    let turns = chain(&u, &c, 0, 12, None).await;
    let last = id(turns.last().unwrap());
    // Lower the budget, then 20 concurrent appends under the last Turn: every one is a change
    // the loop sees, and the conversation is over budget all the while.
    let patched = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"compressionTokenBudget": 200}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(patched["compressionTokenBudget"], 200);
    assert_eq!(patched["compressionProcessId"], json!(process));
    let appends = (0..20).map(|i| {
        let (u, c, last) = (u.clone(), c.clone(), last.clone());
        async move { say(&u, &c, &format!("sibling {i}"), Some(&last)).await }
    });
    futures::future::join_all(appends).await;

    let summary = wait_for("a Summary", Duration::from_secs(60), || async {
        summaries(&u, &c).await.first().cloned()
    })
    .await;
    // Two more ticks: a second compression would have been claimed and started by then.
    upkeep_ticks(2).await;
    let runs = runs_of(&u, &process).await;
    assert_eq!(runs.len(), 1, "one compression run: {runs:?}");
    assert_eq!(
        runs[0]["trigger"],
        json!({"kind": "compression", "subjectId": c}),
        "the run says what started it"
    );
    assert_eq!(summaries(&u, &c).await.len(), 1);
    assert_eq!(summary["createdByProcessId"], json!(process));
    assert_eq!(summary["runId"], runs[0]["id"]);
    assert_eq!(
        summary["compressionLevel"], 1,
        "SUM-1: Alternatives are level 0"
    );
    let covered = text(&summary["coversUpToTurnId"]);
    let covered_at = turns
        .iter()
        .position(|t| id(t) == covered)
        .expect("a Turn of the chain");
    let sources = summary["sources"].as_array().unwrap();
    assert_eq!(
        sources.len(),
        covered_at + 1,
        "the span from the root: {summary}"
    );
    assert_eq!(sources[0], json!(first(&turns[0])));
    let run = u
        .get(&format!("/v1/runs/{}", text(&runs[0]["id"])))
        .await
        .ok(200)
        .clone();
    assert_eq!(run["output"], summary["content"]);
    assert!(
        text(&run["inputs"]["transcript"]).starts_with(&format!("user: {}", line(0))),
        "the transcript is the span: {}",
        run["inputs"]
    );

    // WM-3: working memory at the current position uses it instead of the covered span.
    let memory = wm(&u, &c, "").await;
    assert_eq!(memory["summaries"][0]["id"], summary["id"]);
    let first_kept = path(&memory)[0]["turnId"].clone();
    assert_eq!(first_kept, turns[covered_at + 1]["id"]);
    assert!(memory["totalTokens"].as_u64().unwrap() <= 200, "{memory}");

    // A branch that leaves the covered path (an edit of Turn 2) does not use it.
    let edited = edit(&u, &id(&turns[1]), "an edited second turn", None).await;
    let branch = say_via(
        &u,
        &c,
        "on the new branch",
        &id(&turns[1]),
        &text(&edited["id"]),
    )
    .await;
    let memory = wm(&u, &c, &format!("?turnId={}", id(&branch))).await;
    assert_eq!(memory["summaries"], json!([]), "{memory}");
    assert_eq!(path(&memory).len(), 3);
}

/// INT-1 / MEM-2: five compressions in a conversation start one introspection run, told which
/// position it replaces; its note takes that position and the old note is archived.
#[tokio::test]
async fn int_1_mem_2_wm_2_five_compressions_make_one_introspection_that_replaces_the_oldest_note() {
    let u = user().await;
    let compress = scripted_process(
        &u,
        &script("compressed {{sourceTokens}} tokens"),
        &["conversationId", "sourceTokens"],
        false,
    )
    .await;
    let introspect = scripted_process(
        &u,
        &script("note about {{conversationContext}}"),
        &["conversationContext"],
        true,
    )
    .await;
    let saved = save_settings().await;
    admin()
        .patch(
            "/v1/settings",
            json!({"introspectionProcessId": introspect}),
        )
        .await
        .ok(200);
    // A full carousel: positions 0..9, position 0 the oldest.
    for i in 0..10 {
        let note = u
            .post(
                "/v1/introspections",
                json!({"content": format!("note {i}")}),
            )
            .await
            .ok(201)
            .clone();
        assert_eq!(note["carouselPosition"], i, "INT-1: free positions first");
    }
    let c = conversation(&u).await;
    u.patch(
        &format!("/v1/conversations/{c}"),
        json!({"compressionTokenBudget": 200, "compressionProcessId": compress}),
    )
    .await
    .ok(200);
    let mut parent = None;
    for round in 0..5 {
        let turns = chain(&u, &c, round * 14, 14, parent.clone()).await;
        parent = Some(id(turns.last().unwrap()));
        wait_for("a compression", Duration::from_secs(60), || async {
            (summaries(&u, &c).await.len() > round).then_some(Value::Null)
        })
        .await;
    }
    let note = wait_for(
        "the introspection note",
        Duration::from_secs(60),
        || async {
            let items = u.get("/v1/introspections").await.ok(200)["items"].clone();
            items
                .as_array()
                .unwrap()
                .iter()
                .find(|n| !n["runId"].is_null())
                .cloned()
        },
    )
    .await;
    assert_eq!(
        note["carouselPosition"], 0,
        "the oldest position was announced"
    );
    assert_eq!(
        note["content"],
        json!(format!("note about conversation {c}, compressions 1-5"))
    );
    let runs = runs_of(&u, &introspect).await;
    assert_eq!(runs.len(), 1, "one introspection: {runs:?}");
    assert_eq!(note["runId"], runs[0]["id"]);
    let run = u
        .get(&format!("/v1/runs/{}", text(&runs[0]["id"])))
        .await
        .ok(200)
        .clone();
    assert!(
        text(&run["inputs"]["warning"]).starts_with("Position 0 will be replaced"),
        "{}",
        run["inputs"]
    );
    assert_eq!(run["inputs"]["notes"].as_array().unwrap().len(), 10);
    assert_eq!(
        run["inputs"]["recentCompressions"]
            .as_array()
            .unwrap()
            .len(),
        5
    );

    let carousel = u.get("/v1/introspections").await.ok(200)["items"].clone();
    let positions: Vec<i64> = carousel
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["carouselPosition"].as_i64().unwrap())
        .collect();
    assert_eq!(
        positions,
        (0..10).collect::<Vec<_>>(),
        "INT-1: one note per position"
    );
    let archive = u.get("/v1/introspections/archive").await.ok(200)["items"].clone();
    assert_eq!(
        archive[0]["content"], "note 0",
        "INT-1: replaced, archived, not deleted"
    );
    assert!(!archive[0]["archivedAt"].is_null());

    // WM-2: working memory lists the carousel and counts it.
    let memory = wm(&u, &c, "").await;
    let listed = memory["introspectionContext"].as_array().unwrap();
    assert_eq!(listed.len(), 10);
    let note_tokens: u64 = listed.iter().map(|n| n["tokens"].as_u64().unwrap()).sum();
    let path_tokens: u64 = path(&memory)
        .iter()
        .map(|p| p["tokens"].as_u64().unwrap())
        .sum();
    let summary_tokens: u64 = memory["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tokenCount"].as_u64().unwrap())
        .sum();
    assert_eq!(
        memory["totalTokens"].as_u64().unwrap(),
        note_tokens + path_tokens + summary_tokens
    );
    restore_settings(saved).await;
}

/// INT-1: an injected note at a named position archives the note there; a position outside
/// the carousel is refused; a correction keeps the old content.
#[tokio::test]
async fn int_1_inject_at_a_position_and_correct_keep_the_old_notes() {
    let u = user().await;
    let a = u
        .post(
            "/v1/introspections",
            json!({"content": "first", "carouselPosition": 3}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(a["carouselPosition"], 3);
    let b = u
        .post(
            "/v1/introspections",
            json!({"content": "second", "carouselPosition": 3}),
        )
        .await
        .ok(201)
        .clone();
    let carousel = u.get("/v1/introspections").await.ok(200)["items"].clone();
    assert_eq!(carousel, json!([b]));
    let archive = u.get("/v1/introspections/archive").await.ok(200)["items"].clone();
    assert_eq!(archive[0]["id"], a["id"]);
    u.post(
        "/v1/introspections",
        json!({"content": "x", "carouselPosition": 10}),
    )
    .await
    .rejects(422, "INT-1");
    let corrected = u
        .put(
            &format!("/v1/introspections/{}/content", id(&b)),
            json!({"content": "second, corrected"}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(corrected["content"], "second, corrected");
    assert_eq!(corrected["revision"], 2);
    #[derive(serde::Deserialize)]
    struct Row {
        previous: Vec<String>,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (i:Introspection {id: $id}) RETURN i.previousContents AS previous",
        )
        .param("id", id(&b)),
    )
    .await;
    assert_eq!(rows[0].previous, ["second"], "the old content is kept");
    // Retired: out of the carousel, archived, its position free again.
    assert_eq!(
        u.delete(&format!("/v1/introspections/{}", id(&b)))
            .await
            .status
            .as_u16(),
        204
    );
    assert_eq!(
        u.get("/v1/introspections").await.ok(200)["items"],
        json!([])
    );
    let archive = u.get("/v1/introspections/archive").await.ok(200)["items"].clone();
    assert_eq!(archive[0]["id"], b["id"]);
    assert_eq!(archive[0]["content"], "second, corrected");
    let again = u
        .post("/v1/introspections", json!({"content": "third"}))
        .await
        .ok(201)
        .clone();
    assert_eq!(again["carouselPosition"], 0, "the lowest free position");
    // Another user's note is not there for them.
    let other = user()
        .await
        .put(
            &format!("/v1/introspections/{}/content", id(&b)),
            json!({"content": "mine now"}),
        )
        .await;
    assert_eq!(other.status.as_u16(), 404);
    let other = user()
        .await
        .delete(&format!("/v1/introspections/{}", id(&again)))
        .await;
    assert_eq!(other.status.as_u16(), 404);
}

/// MEM-4 / ENT-4: an Entity MENTIONed by five Episodes is enriched once: enrichment, facets
/// with confidences (added to the ones it had), enrichedAt, enrichedBy.
#[tokio::test]
async fn ent_4_an_entity_mentioned_five_times_is_enriched_once() {
    let u = user().await;
    let answer = r#"{"summary": "A mathematician.", "facets": {"field": {"values": ["mathematics"], "confidence": 0.9}}}"#;
    let enrich = scripted_process(&u, &script(answer), &["name"], true).await;
    let saved = save_settings().await;
    admin()
        .patch("/v1/settings", json!({"enrichmentProcessId": enrich}))
        .await
        .ok(200);
    let entity = u
        .post(
            "/v1/entities",
            json!({"name": unique("Ada"), "summary": "Someone.", "category": "Person",
                   "facets": {"field": ["poetry"]}}),
        )
        .await
        .ok(201)
        .clone();
    let uuid = text(&entity["uuid"]);
    // What ingestion mirrors from Graphiti: five Episodes that MENTION it.
    graph_write(
        aiden_graph_query(
            "MATCH (n:Entity {uuid: $uuid})
             UNWIND range(1, 5) AS i
             CREATE (e:Episodic {uuid: $uuid + '-ep-' + toString(i), group_id: 'g',
                                 content: 'Ada wrote about engines ' + toString(i),
                                 created_at: $now})
             CREATE (e)-[:MENTIONS {createdAt: $now}]->(n)",
        )
        .param("uuid", uuid.clone())
        .param("now", chrono::Utc::now().to_rfc3339()),
    )
    .await;
    #[derive(serde::Deserialize)]
    struct Row {
        enrichment: Option<String>,
        facets: Option<String>,
        at: Option<String>,
        by: Option<String>,
    }
    let query = || {
        aiden_graph_query(
            "MATCH (n:Entity {uuid: $uuid}) RETURN n.enrichment AS enrichment, n.facets AS facets,
                    n.enrichedAt AS at, n.enrichedBy AS by",
        )
        .param("uuid", uuid.clone())
    };
    let until = Instant::now() + Duration::from_secs(60);
    let row = loop {
        let rows: Vec<Row> = graph_rows(query()).await;
        if rows[0].at.is_some() {
            break rows.into_iter().next().unwrap();
        }
        assert!(Instant::now() < until, "not enriched within 60 s");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(row.by.as_deref(), Some(enrich.as_str()));
    let enrichment: Value = serde_json::from_str(row.enrichment.as_deref().unwrap()).unwrap();
    assert_eq!(enrichment["summary"], "A mathematician.");
    assert_eq!(enrichment["facets"]["field"]["confidence"], 0.9);
    assert_eq!(enrichment["edges"], 5);
    let facets: Value = serde_json::from_str(row.facets.as_deref().unwrap()).unwrap();
    assert_eq!(
        facets["field"],
        json!(["poetry", "mathematics"]),
        "ENT-4: only adds"
    );
    // Once: later ticks, two enrichment scans among them, do not enrich it again.
    upkeep_ticks(10).await;
    assert_eq!(runs_of(&u, &enrich).await.len(), 1);
    let seen = u.get(&format!("/v1/entities/{uuid}")).await.ok(200).clone();
    assert_eq!(seen["name"], entity["name"], "name and sources untouched");
    restore_settings(saved).await;
}

/// MEM-1..5: settings are admin-only; bad thresholds (0, 21, a string) are refused with the
/// rule's ID and change nothing; an upkeep Process must be enabled and shared.
#[tokio::test]
async fn mem_1_to_5_settings_are_checked_with_their_rules() {
    let a = admin();
    let saved = save_settings().await;
    let before = a.get("/v1/settings").await.ok(200).clone();
    for (body, rule) in [
        (json!({"introspectionCompressionThreshold": 0}), "MEM-2"),
        (json!({"introspectionCompressionThreshold": 21}), "MEM-2"),
        (
            json!({"introspectionCompressionThreshold": "five"}),
            "MEM-2",
        ),
        (json!({"maxRotation": 0}), "MEM-3"),
        (json!({"enrichmentEdgeThreshold": "5"}), "MEM-4"),
        (json!({"compressionTokenBudget": -1}), "MEM-1"),
        (
            json!({"compressionProcessId": unique("no-such-process")}),
            "MEM-5",
        ),
    ] {
        a.patch("/v1/settings", body).await.rejects(422, rule);
    }
    let u = user().await;
    let private = scripted_process(&u, &script("x"), &[], false).await;
    a.patch("/v1/settings", json!({"compressionProcessId": private}))
        .await
        .rejects(422, "MEM-5");
    // Nothing changed.
    assert_eq!(a.get("/v1/settings").await.ok(200), &before);
    assert_eq!(u.get("/v1/settings").await.status.as_u16(), 403);
    let denied = u.patch("/v1/settings", json!({"maxRotation": 10})).await;
    assert_eq!(denied.status.as_u16(), 403);
    // A valid change is kept whole, then put back. (Upper bounds: tests running meanwhile see
    // fewer background runs, never more; maxRotation stays, so no note moves to the archive.)
    let changed = a
        .patch(
            "/v1/settings",
            json!({"introspectionCompressionThreshold": 20,
                   "maxRotation": before["maxRotation"],
                   "enrichmentEdgeThreshold": 1000}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(
        (
            &changed["introspectionCompressionThreshold"],
            &changed["maxRotation"],
            &changed["enrichmentEdgeThreshold"]
        ),
        (&json!(20), &before["maxRotation"], &json!(1000))
    );
    assert_eq!(
        a.get("/v1/settings").await.ok(200)["enrichmentEdgeThreshold"],
        1000
    );
    restore_settings(saved).await;
    // A conversation's override follows MEM-1 and MEM-5 too.
    let c = conversation(&u).await;
    u.patch(
        &format!("/v1/conversations/{c}"),
        json!({"compressionTokenBudget": "big"}),
    )
    .await
    .rejects(422, "MEM-1");
    u.patch(
        &format!("/v1/conversations/{c}"),
        json!({"compressionProcessId": unique("nope")}),
    )
    .await
    .rejects(422, "MEM-5");
}

/// SUM-1 (admin repair): tokenCount adjusted, content corrected (old content kept, a new
/// Episode to bind), deletes refused while another Summary summarizes it, and working memory
/// falls back to what is left.
#[tokio::test]
async fn sum_1_admin_adjusts_corrects_and_deletes_summaries() {
    let u = user().await;
    let a = admin();
    let c = conversation(&u).await;
    let turns = chain(&u, &c, 0, 3, None).await;
    let post = |body: Value| {
        let (u, c) = (u.clone(), c.clone());
        async move {
            u.post(&format!("/v1/conversations/{c}/summaries"), body)
                .await
                .ok(201)
                .clone()
        }
    };
    let s1 = post(
        json!({"content": "first two", "coversUpToTurnId": id(&turns[1]),
                         "sources": [first(&turns[0]), first(&turns[1])]}),
    )
    .await;
    let s2 = post(
        json!({"content": "all three", "coversUpToTurnId": id(&turns[2]),
                         "sources": [id(&s1), first(&turns[2])]}),
    )
    .await;
    assert_eq!(s2["compressionLevel"], 2);

    let denied = u
        .patch(
            &format!("/v1/summaries/{}", id(&s2)),
            json!({"tokenCount": 7}),
        )
        .await;
    assert_eq!(denied.status.as_u16(), 403);
    let adjusted = a
        .patch(
            &format!("/v1/summaries/{}", id(&s2)),
            json!({"tokenCount": 7}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(adjusted["tokenCount"], 7);
    assert_eq!(wm(&u, &c, "").await["totalTokens"], 7);
    let corrected = a
        .patch(
            &format!("/v1/summaries/{}", id(&s2)),
            json!({"content": "all three, fixed"}),
        )
        .await
        .ok(200)
        .clone();
    assert_eq!(corrected["content"], "all three, fixed");
    assert_eq!(corrected["revision"], 2);
    assert_eq!(corrected["compressionLevel"], 2, "SUM-1: immutable");
    assert_eq!(corrected["sources"], s2["sources"], "SUM-1: immutable");
    #[derive(serde::Deserialize)]
    struct Kept {
        previous: Vec<String>,
    }
    let kept: Vec<Kept> = graph_rows(
        aiden_graph_query("MATCH (s:Summary {id: $id}) RETURN s.previousContents AS previous")
            .param("id", id(&s2)),
    )
    .await;
    assert_eq!(kept[0].previous, ["all three"]);

    a.delete(&format!("/v1/summaries/{}", id(&s1)))
        .await
        .rejects(409, "SUM-1");
    assert_eq!(
        a.delete(&format!("/v1/summaries/{}", id(&s2)))
            .await
            .status
            .as_u16(),
        204
    );
    let memory = wm(&u, &c, "").await;
    assert_eq!(
        memory["summaries"][0]["id"], s1["id"],
        "falls back to the one below"
    );
    assert_eq!(
        a.delete(&format!("/v1/summaries/{}", id(&s1)))
            .await
            .status
            .as_u16(),
        204
    );
    let memory = wm(&u, &c, "").await;
    assert_eq!(memory["summaries"], json!([]));
    assert_eq!(path(&memory).len(), 3, "the uncompressed path again");
    assert_eq!(summaries(&u, &c).await, Vec::<Value>::new());
}
