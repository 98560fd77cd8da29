//! Branching conversations (issue #4) through the public API, against the real Bolt server and
//! RabbitMQ: every CONV / TURN / WM / SUM rule by name, agent turns run by Processes, a scripted
//! tree with edits, regenerations, a continue-from-older and a fork, concurrency, and bad input
//! that must leave nothing behind. Agent Processes call a local HTTP upstream (`/reply`).

use std::time::{Duration, Instant};

use aiden_tests::{aiden_graph_query, fixtures, graph_rows, unique, user, Client};
use axum::{extract::Query, http::StatusCode, routing::get, Json, Router};
use serde_json::{json, Value};

/// `GET /reply?q=&ms=` answers `{"reply": "re: <q>"}` after `ms`; `/missing` is a 404.
async fn upstream() -> String {
    async fn reply(Query(p): Query<std::collections::HashMap<String, String>>) -> Json<Value> {
        let ms = p.get("ms").and_then(|m| m.parse().ok()).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Json(json!({"reply": format!("re: {}", p.get("q").cloned().unwrap_or_default())}))
    }
    let app = Router::new()
        .route("/reply", get(reply))
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned()
}

/// Agent Processes for one user: two that answer (tagged P1/P2), one that is slow, one that fails.
struct Agents {
    p1: String,
    p2: String,
    slow: String,
    broken: String,
}

async fn agents(u: &Client) -> Agents {
    let base = upstream().await;
    let svc = fixtures::create(
        u,
        "services",
        json!({"id": unique("svc"), "name": "upstream", "type": "rest_api", "protocol": "http",
               "endpoint": base, "connectionSchema": fixtures::rest_schema(),
               "requiresSecret": false, "enabled": true}),
    )
    .await;
    let tool = |path: &str| {
        json!({"id": unique("tool"), "name": "reply", "serviceId": id(&svc),
               "connectionParams": {"endpoint": base}, "operation": {"type": "rest_api", "method": "GET", "path": path},
               "inputSchema": {"type": "object", "required": ["q", "ms"],
                               "properties": {"q": {"type": "string"}, "ms": {"type": "integer"}}},
               "outputSchema": {"type": "object"}})
    };
    let reply = id(&fixtures::create(u, "tools", tool("/reply?q={{q}}&ms={{ms}}")).await);
    let missing = id(&fixtures::create(u, "tools", tool("/missing?q={{q}}&ms={{ms}}")).await);
    let process = |tag: &str, tool: &str, ms: i64| {
        json!({"id": unique("agent"), "name": tag, "initialContext": ["userMessage", "workingMemory"],
               "steps": [{"id": "ask", "tool": tool,
                          "inputs": {"q": "{{userMessage}}", "ms": ms}, "output": {"variable": "r"}}],
               "outputTemplate": format!("{tag} {{{{r.body.reply}}}} ({{{{workingMemory.totalTokens}}}})")})
    };
    Agents {
        p1: id(&fixtures::create(u, "processes", process("P1", &reply, 0)).await),
        p2: id(&fixtures::create(u, "processes", process("P2", &reply, 0)).await),
        slow: id(&fixtures::create(u, "processes", process("SLOW", &reply, 1500)).await),
        broken: id(&fixtures::create(u, "processes", process("X", &missing, 0)).await),
    }
}

async fn conversation(u: &Client) -> String {
    id(u.post("/v1/conversations", json!({"title": "t"}))
        .await
        .ok(201))
}

/// A user turn; returns the Turn.
async fn say(u: &Client, c: &str, content: &str, parent: Option<&str>) -> Value {
    let mut body = json!({"speaker": "user", "content": content});
    if let Some(p) = parent {
        body["parentTurnId"] = json!(p);
    }
    u.post(&format!("/v1/conversations/{c}/turns"), body)
        .await
        .ok(201)
        .clone()
}

/// An agent turn under `parent` (optionally a chosen parent Alternative), settled.
async fn answer(
    u: &Client,
    c: &str,
    process: &str,
    parent: &str,
    parent_alt: Option<&str>,
) -> Value {
    let mut body = json!({"processId": process, "parentTurnId": parent});
    if let Some(a) = parent_alt {
        body["parentAlternativeId"] = json!(a);
    }
    let g = u
        .post(&format!("/v1/conversations/{c}/agent-turns"), body)
        .await
        .ok(202)
        .clone();
    assert_eq!(g["status"], "generating");
    settled(
        u,
        g["turnId"].as_str().unwrap(),
        g["alternativeId"].as_str().unwrap(),
    )
    .await
}

/// Another Alternative of a Turn: content for user turns (201), a Process for agent turns (202).
async fn another(u: &Client, turn: &str, body: Value) -> Value {
    let r = u
        .post(&format!("/v1/turns/{turn}/alternatives"), body)
        .await;
    if r.status == 202 {
        let g = r.ok(202).clone();
        return settled(u, turn, g["alternativeId"].as_str().unwrap()).await;
    }
    let t = r.ok(201).clone();
    t["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["isActive"] == true)
        .cloned()
        .unwrap()
}

/// Waits until the Alternative is no longer generating; returns it.
async fn settled(u: &Client, turn: &str, alt: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = alternative(u, turn, alt).await;
        if a["cacheStatus"] != "generating" {
            return a;
        }
        assert!(Instant::now() < deadline, "still generating: {a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn alternative(u: &Client, turn: &str, alt: &str) -> Value {
    let t = u.get(&format!("/v1/turns/{turn}")).await.ok(200).clone();
    t["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == alt)
        .cloned()
        .unwrap_or_else(|| panic!("{alt} not in {t}"))
}

async fn tree(u: &Client, c: &str) -> Value {
    u.get(&format!("/v1/conversations/{c}/tree"))
        .await
        .ok(200)
        .clone()
}

fn alt_in(tree: &Value, alt: &str) -> Value {
    tree["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["alternatives"].as_array().unwrap().iter())
        .find(|a| a["id"] == alt)
        .cloned()
        .unwrap_or_else(|| panic!("{alt} not in tree"))
}

async fn wm(u: &Client, c: &str, query: &str) -> Value {
    u.get(&format!("/v1/conversations/{c}/working-memory{query}"))
        .await
        .ok(200)
        .clone()
}

fn path_contents(wm: &Value) -> Vec<String> {
    wm["immediatePath"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn first_alt(turn: &Value) -> String {
    turn["alternatives"][0]["id"].as_str().unwrap().to_owned()
}

/// The whole conversation as a comparable fingerprint (for "nothing was written").
async fn fingerprint(u: &Client, c: &str) -> Value {
    let mut t = tree(u, c).await;
    t["conversation"]["updatedAt"] = Value::Null;
    t
}

#[tokio::test]
async fn conv_1_conversations_are_never_deleted_only_archived() {
    let u = user().await;
    let c = conversation(&u).await;
    say(&u, &c, "hello", None).await;
    u.delete(&format!("/v1/conversations/{c}"))
        .await
        .rejects(405, "CONV-1");
    u.get(&format!("/v1/conversations/{c}")).await.ok(200);
    let archived = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"status": "archived"}),
        )
        .await;
    assert_eq!(archived.ok(200)["status"], "archived");
    let listed = u.get("/v1/conversations").await;
    assert!(
        !listed.ok(200).to_string().contains(&c),
        "archived are hidden"
    );
    let all = u.get("/v1/conversations?includeArchived=true").await;
    assert!(all.ok(200).to_string().contains(&c));
    let t = tree(&u, &c).await["turns"][0]["id"].clone();
    let r = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "more", "parentTurnId": t}),
        )
        .await;
    assert_eq!(r.status, 409, "archived conversations take no new turns");
    u.patch(
        &format!("/v1/conversations/{c}"),
        json!({"status": "active"}),
    )
    .await
    .ok(200);
    say(&u, &c, "more", t.as_str()).await;
    u.patch(&format!("/v1/conversations/{c}"), json!({"status": "gone"}))
        .await
        .ok(400);
}

#[tokio::test]
async fn conv_2_default_process_is_an_enabled_visible_process_and_follows_agent_turns() {
    let u = user().await;
    let other = user().await;
    let a = agents(&u).await;
    let theirs = agents(&other).await;
    u.post("/v1/conversations", json!({"defaultProcessId": theirs.p1}))
        .await
        .rejects(422, "CONV-2");
    u.patch(
        &format!("/v1/processes/{}", a.p2),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    u.post("/v1/conversations", json!({"defaultProcessId": a.p2}))
        .await
        .rejects(422, "CONV-2");
    let c = id(u
        .post("/v1/conversations", json!({"defaultProcessId": a.p1}))
        .await
        .ok(201));
    let root = say(&u, &c, "hi", None).await;
    // A disabled Process cannot run an agent turn (PROC-8), and nothing is written.
    let before = fingerprint(&u, &c).await;
    u.post(
        &format!("/v1/conversations/{c}/agent-turns"),
        json!({"processId": a.p2, "parentTurnId": id(&root)}),
    )
    .await
    .rejects(422, "PROC-8");
    assert_eq!(fingerprint(&u, &c).await, before);
    u.patch(&format!("/v1/processes/{}", a.p2), json!({"enabled": true}))
        .await
        .ok(200);
    answer(&u, &c, &a.p2, &id(&root), None).await;
    answer(&u, &c, &a.p2, &id(&root), None).await;
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        conv["defaultProcessId"],
        json!(a.p2),
        "follows the latest agent turn"
    );
    #[derive(serde::Deserialize)]
    struct Edge {
        p: String,
    }
    let edges: Vec<Edge> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[:DEFAULT_PROCESS]->(p:Process) RETURN p.id AS p",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(edges.len(), 1, "updated idempotently: one edge");
    assert_eq!(edges[0].p, a.p2);
    let cleared = u
        .patch(
            &format!("/v1/conversations/{c}"),
            json!({"defaultProcessId": null}),
        )
        .await;
    assert_eq!(cleared.ok(200)["defaultProcessId"], Value::Null);
}

#[tokio::test]
async fn conv_3_a_fork_owns_a_copy_of_the_path_and_evolves_independently() {
    let u = user().await;
    let a = agents(&u).await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = answer(&u, &c, &a.p1, &id(&t1), None).await;
    let t2_turn = t2["turnId"].as_str().unwrap().to_owned();
    let t3 = say(&u, &c, "three", Some(&t2_turn)).await;
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": t2_turn, "alternativeId": t2["id"], "title": "branch"}),
        )
        .await;
    let fork = fork.ok(201).clone();
    let f = id(&fork);
    assert_eq!(
        fork["forkedFrom"],
        json!({"conversationId": c, "originTurnId": t2_turn, "originAlternativeId": t2["id"]})
    );
    let ft = tree(&u, &f).await;
    let turns = ft["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "the path up to the fork point");
    assert_eq!(turns[0]["alternatives"][0]["content"], "one");
    assert_eq!(turns[1]["alternatives"][0]["content"], t2["content"]);
    assert_eq!(turns[1]["alternatives"][0]["executedBy"], t2["executedBy"]);
    assert_eq!(turns[1]["parentTurnId"], turns[0]["id"]);
    for t in turns {
        assert_ne!(t["id"], t1["id"]);
        assert_ne!(t["id"], json!(t2_turn));
        assert_eq!(t["conversationId"], json!(f));
    }
    // WM-3 in the fork: everything on its path is its own.
    let fwm = wm(&u, &f, "").await;
    assert_eq!(
        path_contents(&fwm),
        ["one", t2["content"].as_str().unwrap()]
    );
    for p in fwm["immediatePath"].as_array().unwrap() {
        assert!(turns.iter().any(|t| t["id"] == p["turnId"]));
    }
    // Changes on either side stay there.
    let fork_leaf = turns[1]["id"].as_str().unwrap().to_owned();
    say(&u, &f, "fork only", Some(&fork_leaf)).await;
    another(&u, &id(&t3), json!({"content": "three, edited"})).await;
    assert_eq!(tree(&u, &f).await["turns"].as_array().unwrap().len(), 3);
    let origin = tree(&u, &c).await;
    assert_eq!(origin["turns"].as_array().unwrap().len(), 3);
    assert!(!origin.to_string().contains("fork only"));
    assert!(!tree(&u, &f).await.to_string().contains("three, edited"));
    // The fork point must be an alternative of the named turn of this conversation.
    u.post(
        &format!("/v1/conversations/{c}/fork"),
        json!({"turnId": id(&t1), "alternativeId": t2["id"]}),
    )
    .await
    .rejects(422, "TURN-2");
    u.post(
        &format!("/v1/conversations/{f}/fork"),
        json!({"turnId": id(&t1), "alternativeId": first_alt(&t1)}),
    )
    .await
    .rejects(422, "CONV-3");
}

#[tokio::test]
async fn turn_1_sequence_is_the_depth_and_later_turns_need_a_parent() {
    let u = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "a", None).await;
    assert_eq!(t1["sequence"], 1);
    assert_eq!(t1["parentTurnId"], Value::Null);
    u.post(
        &format!("/v1/conversations/{c}/turns"),
        json!({"speaker": "user", "content": "orphan"}),
    )
    .await
    .rejects(422, "TURN-3");
    let t2 = say(&u, &c, "b", Some(&id(&t1))).await;
    let sibling = say(&u, &c, "b'", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "c", Some(&id(&t2))).await;
    assert_eq!(t2["sequence"], 2);
    assert_eq!(sibling["sequence"], 2, "siblings share a depth");
    assert_eq!(t3["sequence"], 3);
    #[derive(serde::Deserialize)]
    struct Row {
        edge: i64,
        node: i64,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[h:HAS_TURN]->(t:ConversationTurn)
             RETURN h.sequence AS edge, t.sequence AS node",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 4, "one HAS_TURN per Turn");
    assert!(rows.iter().all(|r| r.edge == r.node));
}

#[tokio::test]
async fn turn_2_exactly_one_active_alternative_under_50_concurrent_switches() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "v1", None).await;
    let turn = id(&t);
    let mut alts = vec![first_alt(&t)];
    for i in 2..=5 {
        alts.push(id(
            &another(&u, &turn, json!({"content": format!("v{i}")})).await
        ));
    }
    let switches = (0..50).map(|i| {
        let u = u.clone();
        let (turn, alt) = (turn.clone(), alts[i % alts.len()].clone());
        async move {
            u.put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await
            .status
        }
    });
    let statuses = futures::future::join_all(switches).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let now = u.get(&format!("/v1/turns/{turn}")).await.ok(200).clone();
    let active: Vec<&Value> = now["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["isActive"] == true)
        .collect();
    assert_eq!(active.len(), 1, "{now}");
    #[derive(serde::Deserialize)]
    struct N {
        n: i64,
    }
    let n: Vec<N> = graph_rows(
        aiden_graph_query(
            "MATCH (:ConversationTurn {id: $t})-[h:HAS_ALTERNATIVE {isActive: true}]->() RETURN count(h) AS n",
        )
        .param("t", turn.as_str()),
    )
    .await;
    assert_eq!(n[0].n, 1);
}

#[tokio::test]
async fn turn_2_concurrent_new_alternatives_never_duplicate_a_sequence() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "v0", None).await;
    let turn = id(&t);
    let adds = (0..20).map(|i| {
        let u = u.clone();
        let turn = turn.clone();
        async move {
            u.post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"content": format!("edit {i}")}),
            )
            .await
            .status
        }
    });
    let statuses = futures::future::join_all(adds).await;
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let now = u.get(&format!("/v1/turns/{turn}")).await.ok(200).clone();
    let alts = now["alternatives"].as_array().unwrap();
    let mut seqs: Vec<i64> = alts
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    seqs.sort();
    assert_eq!(seqs, (1..=21).collect::<Vec<_>>());
    assert_eq!(alts.iter().filter(|a| a["isActive"] == true).count(), 1);
}

#[tokio::test]
async fn turn_2_switching_to_an_alternative_of_another_turn_is_rejected_and_writes_nothing() {
    let u = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "a", None).await;
    let t2 = say(&u, &c, "b", Some(&id(&t1))).await;
    let before = fingerprint(&u, &c).await;
    u.put(
        &format!("/v1/turns/{}/active", id(&t1)),
        json!({"alternativeId": first_alt(&t2)}),
    )
    .await
    .rejects(422, "TURN-2");
    u.put(
        &format!("/v1/turns/{}/active", id(&t1)),
        json!({"alternativeId": "no-such-alternative"}),
    )
    .await
    .rejects(422, "TURN-2");
    assert_eq!(fingerprint(&u, &c).await, before);
}

#[tokio::test]
async fn turn_3_responding_to_an_alternative_outside_the_parent_turn_is_rejected_and_writes_nothing(
) {
    let u = user().await;
    let a = agents(&u).await;
    let c = conversation(&u).await;
    let other = conversation(&u).await;
    let t1 = say(&u, &c, "a", None).await;
    let t2 = say(&u, &c, "b", Some(&id(&t1))).await;
    let elsewhere = say(&u, &other, "x", None).await;
    let before = fingerprint(&u, &c).await;
    let turns = format!("/v1/conversations/{c}/turns");
    let post = |body: Value| u.post(&turns, body);
    post(
        json!({"speaker": "user", "content": "c", "parentTurnId": id(&t2),
                "parentAlternativeId": first_alt(&t1)}),
    )
    .await
    .rejects(422, "TURN-3");
    post(json!({"speaker": "user", "content": "c", "parentTurnId": id(&elsewhere)}))
        .await
        .rejects(422, "TURN-3");
    u.post(
        &format!("/v1/conversations/{c}/agent-turns"),
        json!({"processId": a.p1, "parentTurnId": id(&t2), "parentAlternativeId": first_alt(&t1)}),
    )
    .await
    .rejects(422, "TURN-3");
    u.post(
        &format!("/v1/turns/{}/alternatives", id(&t2)),
        json!({"content": "b'", "parentAlternativeId": first_alt(&t2)}),
    )
    .await
    .rejects(422, "TURN-3");
    assert_eq!(fingerprint(&u, &c).await, before);
    // Structure in the graph: CHILD_OF the parent, RESPONDS_TO its active alternative.
    #[derive(serde::Deserialize)]
    struct Row {
        parent: String,
        via: String,
        responds: String,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (t:ConversationTurn {id: $t})-[c:CHILD_OF]->(p:ConversationTurn),
                   (t)-[:HAS_ALTERNATIVE]->(:Alternative)-[:RESPONDS_TO]->(r:Alternative)
             RETURN p.id AS parent, c.viaAlternative AS via, r.id AS responds",
        )
        .param("t", id(&t2).as_str()),
    )
    .await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].parent, id(&t1));
    assert_eq!(rows[0].via, first_alt(&t1));
    assert_eq!(rows[0].responds, first_alt(&t1));
}

#[tokio::test]
async fn turn_4_turns_and_alternatives_are_never_edited_or_deleted() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "fixed", None).await;
    for r in [
        u.patch(
            &format!("/v1/turns/{}", id(&t)),
            json!({"content": "changed"}),
        )
        .await,
        u.delete(&format!("/v1/turns/{}", id(&t))).await,
        u.put(
            &format!("/v1/turns/{}", id(&t)),
            json!({"content": "changed"}),
        )
        .await,
    ] {
        assert_eq!(r.status, 405, "{:?}", r.body);
    }
    let edited = another(&u, &id(&t), json!({"content": "revised"})).await;
    let now = u
        .get(&format!("/v1/turns/{}", id(&t)))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        now["alternatives"][0]["content"], "fixed",
        "the original stays"
    );
    assert_eq!(now["alternatives"][1]["id"], edited["id"]);
}

#[tokio::test]
async fn turn_5_only_agent_alternatives_are_executed_by_a_process() {
    let u = user().await;
    let a = agents(&u).await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "q", None).await;
    assert_eq!(t1["alternatives"][0]["executedBy"], Value::Null);
    let reply = answer(&u, &c, &a.p1, &id(&t1), None).await;
    assert_eq!(
        reply["executedBy"],
        json!({"processId": a.p1, "version": 1})
    );
    let turn = reply["turnId"].as_str().unwrap().to_owned();
    u.post(
        &format!("/v1/turns/{turn}/alternatives"),
        json!({"content": "typed by hand"}),
    )
    .await
    .ok(400);
    u.post(
        &format!("/v1/turns/{}/alternatives", id(&t1)),
        json!({"processId": a.p1}),
    )
    .await
    .ok(400);
    // Version recorded at creation: a later definition change does not rewrite it (PROC-9).
    let patched = u
        .patch(
            &format!("/v1/processes/{}", a.p1),
            json!({"outputTemplate": "P1v2 {{r.body.reply}}"}),
        )
        .await;
    assert_eq!(patched.ok(200)["version"], 2);
    let again = another(&u, &turn, json!({"processId": a.p1})).await;
    assert_eq!(again["executedBy"]["version"], 2);
    assert_eq!(
        alternative(&u, &turn, reply["id"].as_str().unwrap()).await["executedBy"]["version"],
        1
    );
    #[derive(serde::Deserialize)]
    struct N {
        speaker: String,
        n: i64,
    }
    let rows: Vec<N> = graph_rows(
        aiden_graph_query(
            "MATCH (t:ConversationTurn {conversationId: $c})-[:HAS_ALTERNATIVE]->(a:Alternative)
             OPTIONAL MATCH (a)-[e:EXECUTED_BY]->(:Process)
             RETURN t.speaker AS speaker, a.id AS id, count(e) AS n",
        )
        .param("c", c.as_str()),
    )
    .await;
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r.n, i64::from(r.speaker == "agent"), "{}", r.speaker);
    }
}

#[tokio::test]
async fn turn_6_cache_status_is_generating_valid_stale_or_failed() {
    let u = user().await;
    let a = agents(&u).await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "question", None).await;
    let g = u
        .post(
            &format!("/v1/conversations/{c}/agent-turns"),
            json!({"processId": a.slow, "parentTurnId": id(&t1)}),
        )
        .await
        .ok(202)
        .clone();
    let (turn, alt) = (
        g["turnId"].as_str().unwrap().to_owned(),
        g["alternativeId"].as_str().unwrap().to_owned(),
    );
    let generating = alternative(&u, &turn, &alt).await;
    assert_eq!(generating["cacheStatus"], "generating");
    assert_eq!(generating["content"], Value::Null);
    assert_eq!(generating["runId"], g["runId"]);
    // Streaming: the run behind a generating Alternative is reachable from it.
    let run = u
        .get(&format!("/v1/runs/{}", g["runId"].as_str().unwrap()))
        .await;
    assert!(matches!(
        run.ok(200)["status"].as_str(),
        Some("queued" | "running")
    ));
    let done = settled(&u, &turn, &alt).await;
    assert_eq!(done["cacheStatus"], "valid");
    assert!(done["content"]
        .as_str()
        .unwrap()
        .starts_with("SLOW re: question"));
    // Editing the question makes the answer stale; switching back makes it valid again.
    let edited = another(&u, &id(&t1), json!({"content": "question, revised"})).await;
    assert_eq!(alternative(&u, &turn, &alt).await["cacheStatus"], "stale");
    u.put(
        &format!("/v1/turns/{}/active", id(&t1)),
        json!({"alternativeId": first_alt(&t1)}),
    )
    .await
    .ok(200);
    assert_eq!(alternative(&u, &turn, &alt).await["cacheStatus"], "valid");
    // A run that fails leaves a failed Alternative carrying the run's error.
    let failed = another(
        &u,
        &turn,
        json!({"processId": a.broken, "parentAlternativeId": first_alt(&t1)}),
    )
    .await;
    assert_eq!(failed["cacheStatus"], "failed", "{failed}");
    assert_eq!(failed["content"], Value::Null);
    assert!(failed["error"]["code"].is_string(), "{failed}");
    // Responding to a failed alternative is refused (nothing to respond to).
    let r = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "next", "parentTurnId": turn}),
        )
        .await;
    assert_eq!(r.status, 409);
    let _ = edited;
}

#[tokio::test]
async fn turn_6_agent_content_is_written_once_from_the_run_output() {
    let u = user().await;
    let a = agents(&u).await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "ping", None).await;
    let reply = answer(&u, &c, &a.p1, &id(&t1), None).await;
    let run_id = reply["runId"].as_str().unwrap();
    let run = u.get(&format!("/v1/runs/{run_id}")).await.ok(200).clone();
    assert_eq!(run["status"], "completed");
    assert_eq!(
        reply["content"], run["output"],
        "content is the run's output"
    );
    // The run saw the agent context.
    for k in [
        "conversationId",
        "turnId",
        "alternativeId",
        "userMessage",
        "workingMemory",
    ] {
        assert!(
            !run["inputs"][k].is_null(),
            "{k} missing from {}",
            run["inputs"]
        );
    }
    assert_eq!(run["inputs"]["userMessage"], "ping");
    assert_eq!(run["inputs"]["alternativeId"], reply["id"]);
    let events = u
        .raw(reqwest::Method::GET, &format!("/v1/runs/{run_id}/events"))
        .send()
        .await
        .unwrap();
    let text = events.text().await.unwrap();
    assert!(text.contains("run.completed"), "{text}");
    #[derive(serde::Deserialize)]
    struct Row {
        content: String,
        state: String,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (a:Alternative {id: $a}) RETURN a.content AS content, a.state AS state",
        )
        .param("a", reply["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(rows[0].content, reply["content"].as_str().unwrap());
    assert_eq!(rows[0].state, "valid");
}

#[tokio::test]
async fn turn_7_episode_binding_is_absent_at_creation() {
    let u = user().await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "x", None).await;
    assert_eq!(t["alternatives"][0]["episodeId"], Value::Null);
    #[derive(serde::Deserialize)]
    struct N {
        n: i64,
    }
    let n: Vec<N> = graph_rows(
        aiden_graph_query("MATCH (a:Alternative {id: $a}) OPTIONAL MATCH (a)-[h:HAS_CONTENT]->() RETURN count(h) AS n")
            .param("a", first_alt(&t).as_str()),
    )
    .await;
    assert_eq!(n[0].n, 0);
}

#[tokio::test]
async fn turn_8_a_new_alternative_becomes_the_active_one() {
    let u = user().await;
    let a = agents(&u).await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "x", None).await;
    let edit = another(&u, &id(&t1), json!({"content": "y"})).await;
    assert_eq!(edit["isActive"], true);
    assert_eq!(edit["sequence"], 2);
    let reply = answer(&u, &c, &a.p1, &id(&t1), None).await;
    let turn = reply["turnId"].as_str().unwrap().to_owned();
    let regen = another(&u, &turn, json!({"processId": a.p2})).await;
    let t = u.get(&format!("/v1/turns/{turn}")).await.ok(200).clone();
    assert_eq!(t["alternatives"][0]["isActive"], false);
    assert_eq!(t["alternatives"][1]["id"], regen["id"]);
    assert_eq!(t["alternatives"][1]["isActive"], true);
    let conv = u
        .get(&format!("/v1/conversations/{c}"))
        .await
        .ok(200)
        .clone();
    assert_eq!(conv["currentAlternativeId"], regen["id"]);
}

#[tokio::test]
async fn wm_1_the_path_follows_each_alternatives_responds_to() {
    let u = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "a1", None).await;
    let t2 = say(&u, &c, "b1", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "c1", Some(&id(&t2))).await;
    let b2 = another(&u, &id(&t2), json!({"content": "b2"})).await;
    // c1 now responds to b1, which is no longer active: its own path still goes through b1.
    let stale = wm(&u, &c, &format!("?alternativeId={}", first_alt(&t3))).await;
    assert_eq!(path_contents(&stale), ["a1", "b1", "c1"]);
    assert_eq!(stale["currentTurnId"], t3["id"]);
    // From b2 (active), the path is the active chain.
    let active = wm(&u, &c, &format!("?turnId={}", id(&t2))).await;
    assert_eq!(path_contents(&active), ["a1", "b2"]);
    assert_eq!(active["currentAlternativeId"], b2["id"]);
    // Default position: the last alternative created or switched to.
    assert_eq!(path_contents(&wm(&u, &c, "").await), ["a1", "b2"]);
    u.put(
        &format!("/v1/turns/{}/active", id(&t3)),
        json!({"alternativeId": first_alt(&t3)}),
    )
    .await
    .ok(200);
    assert_eq!(path_contents(&wm(&u, &c, "").await), ["a1", "b1", "c1"]);
}

#[tokio::test]
async fn wm_2_total_tokens_is_the_sum_of_path_and_summary_estimates() {
    let u = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "12345678", None).await; // 2 tokens
    let t2 = say(&u, &c, "123456789", Some(&id(&t1))).await; // 3 tokens
    let m = wm(&u, &c, "").await;
    assert_eq!(m["totalTokens"], 5);
    let tokens: Vec<i64> = m["immediatePath"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tokens"].as_i64().unwrap())
        .collect();
    assert_eq!(tokens, [2, 3]);
    u.post(
        &format!("/v1/conversations/{c}/summaries"),
        json!({"content": "s", "coversUpToTurnId": id(&t1), "sources": [first_alt(&t1)], "tokenCount": 7}),
    )
    .await
    .ok(201);
    let m = wm(&u, &c, &format!("?alternativeId={}", first_alt(&t2))).await;
    assert_eq!(m["totalTokens"], 7 + 3);
    assert_eq!(m["activeEntities"], json!([]));
    assert_eq!(m["introspectionContext"], json!([]));
}

#[tokio::test]
async fn wm_3_a_covering_summary_replaces_the_path_and_foreign_ids_are_refused() {
    let u = user().await;
    let c = conversation(&u).await;
    let other = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let t2 = say(&u, &c, "two", Some(&id(&t1))).await;
    let t3 = say(&u, &c, "three", Some(&id(&t2))).await;
    let s1 = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "one", "coversUpToTurnId": id(&t1), "sources": [first_alt(&t1)]}),
        )
        .await
        .ok(201)
        .clone();
    let s2 = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "one and two", "coversUpToTurnId": id(&t2),
                   "sources": [id(&s1), first_alt(&t2)]}),
        )
        .await
        .ok(201)
        .clone();
    let m = wm(&u, &c, "").await;
    assert_eq!(path_contents(&m), ["three"]);
    assert_eq!(m["summaries"].as_array().unwrap().len(), 1);
    assert_eq!(
        m["summaries"][0]["id"], s2["id"],
        "the deepest covering summary"
    );
    // A branch through another alternative of turn 2 is not what s2 summarized: only s1 (made
    // from turn 1, which the branch shares) stands in for it.
    let t2b = another(&u, &id(&t2), json!({"content": "two, edited"})).await;
    let m = wm(
        &u,
        &c,
        &format!("?alternativeId={}", t2b["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(m["summaries"].as_array().unwrap().len(), 1);
    assert_eq!(m["summaries"][0]["id"], s1["id"], "{m}");
    assert_eq!(path_contents(&m), ["two, edited"]);
    let _ = t3;
    // Ids of another conversation are refused.
    let x = say(&u, &other, "elsewhere", None).await;
    u.get(&format!(
        "/v1/conversations/{c}/working-memory?alternativeId={}",
        first_alt(&x)
    ))
    .await
    .rejects(422, "WM-3");
    u.get(&format!(
        "/v1/conversations/{c}/working-memory?turnId={}",
        id(&x)
    ))
    .await
    .rejects(422, "WM-3");
    u.post(
        &format!("/v1/conversations/{c}/summaries"),
        json!({"content": "x", "coversUpToTurnId": id(&x), "sources": [first_alt(&t1)]}),
    )
    .await
    .rejects(422, "WM-3");
    u.post(
        &format!("/v1/conversations/{c}/summaries"),
        json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": [first_alt(&x)]}),
    )
    .await
    .rejects(422, "WM-3");
}

#[tokio::test]
async fn sum_1_a_summary_summarizes_sources_one_level_above_them() {
    let u = user().await;
    let c = conversation(&u).await;
    let t1 = say(&u, &c, "one", None).await;
    let summaries = format!("/v1/conversations/{c}/summaries");
    u.post(
        &summaries,
        json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": []}),
    )
    .await
    .rejects(422, "SUM-1");
    u.post(
        &summaries,
        json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": ["nope"]}),
    )
    .await
    .rejects(422, "SUM-1");
    let s1 = u
        .post(
            &summaries,
            json!({"content": "x", "coversUpToTurnId": id(&t1), "sources": [first_alt(&t1)]}),
        )
        .await
        .ok(201)
        .clone();
    assert_eq!(s1["compressionLevel"], 1);
    let s2 = u
        .post(&summaries, json!({"content": "y", "coversUpToTurnId": id(&t1), "sources": [id(&s1), first_alt(&t1)]}))
        .await
        .ok(201)
        .clone();
    assert_eq!(s2["compressionLevel"], 2);
    let listed = u.get(&summaries).await.ok(200).clone();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
    #[derive(serde::Deserialize)]
    struct Row {
        sources: i64,
        covers: String,
    }
    let rows: Vec<Row> = graph_rows(
        aiden_graph_query(
            "MATCH (:Conversation {id: $c})-[:HAS_SUMMARY]->(s:Summary {id: $s})-[:COVERS_UP_TO]->(t)
             MATCH (s)-[:SUMMARIZES]->(src)
             RETURN count(src) AS sources, t.id AS covers",
        )
        .param("c", c.as_str())
        .param("s", id(&s2).as_str()),
    )
    .await;
    assert_eq!(rows[0].sources, 2);
    assert_eq!(rows[0].covers, id(&t1));
}

#[tokio::test]
async fn own_2_another_users_conversation_answers_404_everywhere() {
    let u = user().await;
    let stranger = user().await;
    let a = agents(&stranger).await;
    let c = conversation(&u).await;
    let t = say(&u, &c, "private", None).await;
    let before = fingerprint(&u, &c).await;
    let turn = id(&t);
    let alt = first_alt(&t);
    for r in [
        stranger.get(&format!("/v1/conversations/{c}")).await,
        stranger.get(&format!("/v1/conversations/{c}/tree")).await,
        stranger
            .get(&format!("/v1/conversations/{c}/working-memory"))
            .await,
        stranger
            .get(&format!("/v1/conversations/{c}/summaries"))
            .await,
        stranger.get(&format!("/v1/turns/{turn}")).await,
        stranger
            .patch(&format!("/v1/conversations/{c}"), json!({"title": "mine"}))
            .await,
        stranger.delete(&format!("/v1/conversations/{c}")).await,
        stranger
            .post(
                &format!("/v1/conversations/{c}/turns"),
                json!({"speaker": "user", "content": "x", "parentTurnId": turn}),
            )
            .await,
        stranger
            .post(
                &format!("/v1/conversations/{c}/agent-turns"),
                json!({"processId": a.p1, "parentTurnId": turn}),
            )
            .await,
        stranger
            .post(
                &format!("/v1/turns/{turn}/alternatives"),
                json!({"content": "x"}),
            )
            .await,
        stranger
            .put(
                &format!("/v1/turns/{turn}/active"),
                json!({"alternativeId": alt}),
            )
            .await,
        stranger
            .post(
                &format!("/v1/conversations/{c}/fork"),
                json!({"turnId": turn, "alternativeId": alt}),
            )
            .await,
        stranger
            .post(
                &format!("/v1/conversations/{c}/summaries"),
                json!({"content": "x", "coversUpToTurnId": turn, "sources": [alt]}),
            )
            .await,
    ] {
        assert_eq!(r.code(), "NOT_FOUND", "{:?}", r.body);
    }
    assert!(!stranger
        .get("/v1/conversations")
        .await
        .ok(200)
        .to_string()
        .contains(&c));
    assert_eq!(fingerprint(&u, &c).await, before);
}

/// The scripted scenario: six turns with user edits, regenerations by two Processes, a
/// continue-from-an-older-alternative and a fork, checking the whole tree and the working
/// memory at several points.
#[tokio::test]
async fn scenario_a_six_turn_tree_with_edits_regenerations_a_continue_and_a_fork() {
    let u = user().await;
    let a = agents(&u).await;
    let c = conversation(&u).await;
    // T1 user "hi" → T2 agent (P1) → T3 user "tell me more"
    let t1 = say(&u, &c, "hi", None).await;
    let (t1_id, u1) = (id(&t1), first_alt(&t1));
    let r1 = answer(&u, &c, &a.p1, &t1_id, None).await;
    let t2_id = r1["turnId"].as_str().unwrap().to_owned();
    let t3 = say(&u, &c, "tell me more", Some(&t2_id)).await;
    let (t3_id, u3) = (id(&t3), first_alt(&t3));
    // The user edits T1 → "hello": R1 becomes stale; regenerate T2 with P2 under the edit.
    let u1b = another(&u, &t1_id, json!({"content": "hello"})).await;
    let r2 = another(&u, &t2_id, json!({"processId": a.p2})).await;
    assert_eq!(r2["respondsTo"], u1b["id"]);
    assert_eq!(r2["executedBy"]["processId"], json!(a.p2));
    // Regenerate again with P1 (same parent): three agent alternatives.
    let r3 = another(&u, &t2_id, json!({"processId": a.p1})).await;
    // Continue from the older answer R1: switch T1 back, and T2 to R1, then a new T4 under R1's T3.
    u.put(
        &format!("/v1/turns/{t1_id}/active"),
        json!({"alternativeId": u1}),
    )
    .await
    .ok(200);
    u.put(
        &format!("/v1/turns/{t2_id}/active"),
        json!({"alternativeId": r1["id"]}),
    )
    .await
    .ok(200);
    let r4 = answer(&u, &c, &a.p2, &t3_id, None).await;
    let t4_id = r4["turnId"].as_str().unwrap().to_owned();
    // T5 user edits twice, T6 agent answers the second edit.
    let t5 = say(&u, &c, "and then?", Some(&t4_id)).await;
    let t5_id = id(&t5);
    let u5b = another(&u, &t5_id, json!({"content": "and then what?"})).await;
    let r6 = answer(&u, &c, &a.p1, &t5_id, None).await;
    let t6_id = r6["turnId"].as_str().unwrap().to_owned();

    let full = tree(&u, &c).await;
    let turns = full["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 6);
    let seqs: Vec<i64> = turns
        .iter()
        .map(|t| t["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    let speakers: Vec<&str> = turns
        .iter()
        .map(|t| t["speaker"].as_str().unwrap())
        .collect();
    assert_eq!(
        speakers,
        ["user", "agent", "user", "agent", "user", "agent"]
    );
    // (alternative, isActive, cacheStatus, hasChildren, respondsTo, executedBy process)
    let expect = [
        (u1.clone(), true, "valid", true, None, None),
        (id(&u1b), false, "valid", true, None, None),
        (
            id(&r1),
            true,
            "valid",
            true,
            Some(u1.clone()),
            Some(a.p1.clone()),
        ),
        (
            id(&r2),
            false,
            "stale",
            false,
            Some(id(&u1b)),
            Some(a.p2.clone()),
        ),
        (
            id(&r3),
            false,
            "stale",
            false,
            Some(id(&u1b)),
            Some(a.p1.clone()),
        ),
        (u3.clone(), true, "valid", true, Some(id(&r1)), None),
        (
            id(&r4),
            true,
            "valid",
            true,
            Some(u3.clone()),
            Some(a.p2.clone()),
        ),
        (first_alt(&t5), false, "valid", false, Some(id(&r4)), None),
        (id(&u5b), true, "valid", true, Some(id(&r4)), None),
        (
            id(&r6),
            true,
            "valid",
            false,
            Some(id(&u5b)),
            Some(a.p1.clone()),
        ),
    ];
    for (alt, active, status, children, responds, process) in &expect {
        let got = alt_in(&full, alt);
        assert_eq!(got["isActive"], *active, "isActive of {got}");
        assert_eq!(got["cacheStatus"], *status, "cacheStatus of {got}");
        assert_eq!(got["hasChildren"], *children, "hasChildren of {got}");
        assert_eq!(got["respondsTo"], json!(responds), "respondsTo of {got}");
        assert_eq!(
            got["executedBy"]["processId"],
            json!(process),
            "executedBy of {got}"
        );
    }
    let count: usize = turns
        .iter()
        .map(|t| t["alternatives"].as_array().unwrap().len())
        .sum();
    assert_eq!(count, expect.len());
    assert_eq!(turns[1]["viaAlternative"], json!(u1));
    assert_eq!(turns[3]["parentTurnId"], json!(t3_id));

    // Working memory at the end of the active path, at a stale answer, and mid-path.
    let end = wm(&u, &c, "").await;
    assert_eq!(end["currentTurnId"], json!(t6_id));
    let contents = path_contents(&end);
    assert_eq!(contents.len(), 6);
    assert_eq!(&contents[..1], ["hi"]);
    assert_eq!(contents[2], "tell me more");
    assert_eq!(contents[4], "and then what?");
    assert!(
        contents[5].starts_with("P1 re: and then what?"),
        "{contents:?}"
    );
    let at_r2 = wm(&u, &c, &format!("?alternativeId={}", id(&r2))).await;
    assert_eq!(
        path_contents(&at_r2)[0],
        "hello",
        "a stale answer keeps its own upstream"
    );
    let mid = wm(&u, &c, &format!("?turnId={t3_id}")).await;
    assert_eq!(
        path_contents(&mid),
        ["hi", r1["content"].as_str().unwrap(), "tell me more"]
    );

    // Fork at R4 and continue there; the origin is untouched.
    let fork = u
        .post(
            &format!("/v1/conversations/{c}/fork"),
            json!({"turnId": t4_id, "alternativeId": r4["id"]}),
        )
        .await
        .ok(201)
        .clone();
    let f = id(&fork);
    let fpath = path_contents(&wm(&u, &f, "").await);
    assert_eq!(fpath, contents[..4].to_vec());
    let ftree = tree(&u, &f).await;
    let leaf = ftree["turns"][3]["id"].as_str().unwrap().to_owned();
    let fu = say(&u, &f, "in the fork", Some(&leaf)).await;
    let fr = answer(&u, &f, &a.p2, &id(&fu), None).await;
    assert!(fr["content"]
        .as_str()
        .unwrap()
        .starts_with("P2 re: in the fork"));
    assert_eq!(
        tree(&u, &c).await,
        full,
        "the origin is untouched by its fork"
    );
}
