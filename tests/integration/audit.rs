//! `aiden check`: each (audit) rule reports a stored violation, and stops reporting it once
//! repaired. Violations the API refuses to create are written with raw Cypher, as a broken
//! import or a bug elsewhere would; every test repairs what it broke, so the suite leaves the
//! graph clean for the final `aiden check`.

use aiden_tests::{aiden_graph_query, fixtures, graph_write as write, server, unique, user};
use serde_json::json;

pub(crate) async fn findings_for(id: &str) -> Vec<&'static str> {
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    let findings = aiden_service::Auditor::new(graph)
        .audit()
        .await
        .expect("audit");
    findings
        .into_iter()
        .filter(|f| f.id == id)
        .map(|f| f.invariant)
        .collect()
}

/// SVC-3: a schema change leaves a Tool whose params no longer validate; check reports it.
#[tokio::test]
async fn svc_3_check_reports_tools_whose_params_no_longer_validate() {
    let u = user().await;
    let service = fixtures::rest_service(&u, false).await;
    let tool = fixtures::rest_tool(&u, &service).await;
    assert!(findings_for(&tool).await.is_empty());
    let stricter = json!({"type": "object", "required": ["endpoint", "region"],
        "properties": {"endpoint": {"type": "string"}, "region": {"type": "string"}}});
    let s = u
        .patch(
            &format!("/v1/services/{service}"),
            json!({"connectionSchema": stricter}),
        )
        .await;
    assert_eq!(s.ok(200)["schemaVersion"], 2);
    assert_eq!(findings_for(&tool).await, vec!["SVC-3"]);
    // Repair: give the Tool what the new schema requires.
    u.patch(
        &format!("/v1/tools/{tool}"),
        json!({"connectionParams": {"endpoint": "http://x", "region": "eu"}}),
    )
    .await
    .ok(200);
    assert!(findings_for(&tool).await.is_empty());
}

/// SVC-4: a disabled Service stored as healthy is reported.
#[tokio::test]
async fn svc_4_check_reports_disabled_services_that_claim_healthy() {
    let u = user().await;
    let service = fixtures::rest_service(&u, false).await;
    u.patch(
        &format!("/v1/services/{service}"),
        json!({"enabled": false}),
    )
    .await
    .ok(200);
    assert!(findings_for(&service).await.is_empty());
    write(
        aiden_graph_query("MATCH (s:Service {id: $id}) SET s.status = 'healthy'")
            .param("id", service.as_str()),
    )
    .await;
    assert_eq!(findings_for(&service).await, vec!["SVC-4"]);
    write(
        aiden_graph_query("MATCH (s:Service {id: $id}) SET s.status = 'down'")
            .param("id", service.as_str()),
    )
    .await;
    assert!(findings_for(&service).await.is_empty());
}

/// TOOL-2: a Tool of a secret-requiring Service without USES_SECRET is reported.
#[tokio::test]
async fn tool_2_check_reports_tools_without_their_required_secret() {
    let u = user().await;
    let secret = fixtures::secret(&u, "pw-tool-2").await;
    let service = fixtures::create(&u, "services", fixtures::graph_service_body()).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let tool = fixtures::create(
        &u,
        "tools",
        json!({"id": unique("tool"), "name": "q", "serviceId": service, "secretId": secret,
               "connectionParams": {"endpoint": "bolt://127.0.0.1:7687", "database": "neo4j"},
               "operation": {"type": "graph_query", "query": "MATCH (n) WHERE n.name = $name RETURN n.name AS name"},
               "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
               "outputSchema": {"type": "object"}}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(findings_for(&tool).await.is_empty());
    write(
        aiden_graph_query("MATCH (:Tool {id: $id})-[r:USES_SECRET]->() DELETE r")
            .param("id", tool.as_str()),
    )
    .await;
    assert_eq!(findings_for(&tool).await, vec!["TOOL-2"]);
    write(
        aiden_graph_query(
            "MATCH (t:Tool {id: $id}), (s:Secret {id: $s}) CREATE (t)-[:USES_SECRET]->(s)",
        )
        .param("id", tool.as_str())
        .param("s", secret.as_str()),
    )
    .await;
    assert!(findings_for(&tool).await.is_empty());
}

/// OWN-1: a node without (or with a second) OWNED_BY edge is reported.
#[tokio::test]
async fn own_1_check_reports_missing_or_extra_owners() {
    let (u, other) = (user().await, user().await);
    let service = fixtures::rest_service(&u, false).await;
    write(
        aiden_graph_query(
            "MATCH (s:Service {id: $id}), (o:User {id: $o}) CREATE (s)-[:OWNED_BY]->(o)",
        )
        .param("id", service.as_str())
        .param("o", other.id.as_str()),
    )
    .await;
    assert_eq!(findings_for(&service).await, vec!["OWN-1"]);
    write(
        aiden_graph_query("MATCH (:Service {id: $id})-[r:OWNED_BY]->(:User {id: $o}) DELETE r")
            .param("id", service.as_str())
            .param("o", other.id.as_str()),
    )
    .await;
    assert!(findings_for(&service).await.is_empty());
    write(
        aiden_graph_query("MATCH (:Service {id: $id})-[r:OWNED_BY]->() DELETE r")
            .param("id", service.as_str()),
    )
    .await;
    assert_eq!(findings_for(&service).await, vec!["OWN-1"]);
    write(
        aiden_graph_query(
            "MATCH (s:Service {id: $id}), (o:User {id: $o}) CREATE (s)-[:OWNED_BY]->(o)",
        )
        .param("id", service.as_str())
        .param("o", u.id.as_str()),
    )
    .await;
    assert!(findings_for(&service).await.is_empty());
}

/// SEC-2: a Secret without a well-formed ciphertext is reported.
#[tokio::test]
async fn sec_2_check_reports_secrets_without_ciphertext() {
    let u = user().await;
    let secret = fixtures::secret(&u, "pw-sec-2").await;
    assert!(findings_for(&secret).await.is_empty());
    write(
        aiden_graph_query("MATCH (s:Secret {id: $id}) SET s.encryptedValue = 'plain'")
            .param("id", secret.as_str()),
    )
    .await;
    assert_eq!(findings_for(&secret).await, vec!["SEC-2"]);
    u.patch(
        &format!("/v1/secrets/{secret}"),
        json!({"value": "rotated"}),
    )
    .await
    .ok(200);
    assert!(
        findings_for(&secret).await.is_empty(),
        "rotation writes a fresh ciphertext"
    );
}

/// USR-3: a token that lost its user's HAS_TOKEN edge, or a hash kept on a User, is reported.
#[tokio::test]
async fn usr_3_check_reports_tokens_outside_their_user() {
    let u = user().await;
    let created = u
        .post(
            &format!("/v1/users/{}/tokens", u.id),
            json!({"name": "audit"}),
        )
        .await
        .ok(201)
        .clone();
    let token = created["id"].as_str().unwrap().to_owned();
    assert!(findings_for(&token).await.is_empty());
    write(
        aiden_graph_query("MATCH (:User)-[h:HAS_TOKEN]->(:ApiToken {id: $id}) DELETE h")
            .param("id", token.as_str()),
    )
    .await;
    assert_eq!(findings_for(&token).await, vec!["USR-3"]);
    write(
        aiden_graph_query(
            "MATCH (u:User {id: $u}), (t:ApiToken {id: $id}) CREATE (u)-[:HAS_TOKEN]->(t) \
             SET u.tokenHash = t.hash",
        )
        .param("u", u.id.as_str())
        .param("id", token.as_str()),
    )
    .await;
    assert!(findings_for(&token).await.is_empty(), "edge repaired");
    assert_eq!(
        findings_for(&u.id).await,
        vec!["USR-3"],
        "a hash on the User"
    );
    write(
        aiden_graph_query("MATCH (u:User {id: $u}) REMOVE u.tokenHash").param("u", u.id.as_str()),
    )
    .await;
    assert!(findings_for(&u.id).await.is_empty());
}

/// A conversation built through the API: root user turn → child user turn. Returns
/// `(conversation, root turn, root alternative, child turn, child alternative)`.
async fn small_conversation(u: &aiden_tests::Client) -> (String, String, String, String, String) {
    let c = u.post("/v1/conversations", json!({"title": "audit"})).await;
    let c = c.ok(201)["id"].as_str().unwrap().to_owned();
    let root = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "root"}),
        )
        .await;
    let root = root.ok(201).clone();
    let child = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "child", "parentTurnId": root["id"]}),
        )
        .await;
    let child = child.ok(201).clone();
    let s = |v: &serde_json::Value| v.as_str().unwrap().to_owned();
    (
        c,
        s(&root["id"]),
        s(&root["alternatives"][0]["id"]),
        s(&child["id"]),
        s(&child["alternatives"][0]["id"]),
    )
}

/// TURN-1 / TURN-2 / TURN-3 / TURN-5 / TURN-6 / TURN-7 / OWN-1: an API-built conversation is clean;
/// each kind of corruption is reported under its rule and stops being reported once repaired.
#[tokio::test]
async fn turn_1_2_3_5_6_7_check_reports_corrupted_conversations() {
    let u = user().await;
    let (c, root, root_alt, child, child_alt) = small_conversation(&u).await;
    for id in [&c, &root, &root_alt, &child, &child_alt] {
        assert!(findings_for(id).await.is_empty(), "{id} should start clean");
    }
    let q = |text: &str| {
        aiden_graph_query(text)
            .param("c", c.as_str())
            .param("root", root.as_str())
            .param("rootAlt", root_alt.as_str())
            .param("child", child.as_str())
            .param("childAlt", child_alt.as_str())
    };
    // TURN-1: a sequence that is not the depth.
    write(q(
        "MATCH (t:ConversationTurn {id: $child}) SET t.sequence = 5",
    ))
    .await;
    assert_eq!(findings_for(&child).await, vec!["TURN-1"]);
    write(q(
        "MATCH (t:ConversationTurn {id: $child}) SET t.sequence = 2",
    ))
    .await;
    // TURN-2: two active alternatives, then none.
    write(q(
        "MATCH (:ConversationTurn {id: $root})-[h:HAS_ALTERNATIVE]->() SET h.isActive = false",
    ))
    .await;
    assert_eq!(findings_for(&root).await, vec!["TURN-2"]);
    write(q(
        "MATCH (:ConversationTurn {id: $root})-[h:HAS_ALTERNATIVE]->() SET h.isActive = true",
    ))
    .await;
    assert!(findings_for(&root).await.is_empty());
    // TURN-3: a child alternative that responds to nothing.
    write(q(
        "MATCH (:Alternative {id: $childAlt})-[r:RESPONDS_TO]->() DELETE r",
    ))
    .await;
    assert_eq!(findings_for(&child).await, vec!["TURN-3"]);
    write(q("MATCH (a:Alternative {id: $childAlt}), (p:Alternative {id: $rootAlt}) CREATE (a)-[:RESPONDS_TO]->(p)")).await;
    assert!(findings_for(&child).await.is_empty());
    // TURN-5: a user alternative claiming a Process.
    let service = fixtures::rest_service(&u, false).await;
    let tool = fixtures::rest_tool(&u, &service).await;
    let process = u.post("/v1/processes", fixtures::process_body(&tool)).await;
    let process = process.ok(201)["id"].as_str().unwrap().to_owned();
    write(q("MATCH (a:Alternative {id: $rootAlt}), (p:Process {id: $p}) CREATE (a)-[:EXECUTED_BY]->(p)").param("p", process.as_str())).await;
    assert_eq!(findings_for(&root_alt).await, vec!["TURN-5"]);
    write(q(
        "MATCH (:Alternative {id: $rootAlt})-[e:EXECUTED_BY]->() DELETE e",
    ))
    .await;
    // TURN-6: generating with no run behind it.
    write(q(
        "MATCH (a:Alternative {id: $rootAlt}) SET a.state = 'generating'",
    ))
    .await;
    assert_eq!(findings_for(&root_alt).await, vec!["TURN-6"]);
    write(q(
        "MATCH (a:Alternative {id: $rootAlt}) SET a.state = 'valid'",
    ))
    .await;
    // TURN-7: an episodeId without its HAS_CONTENT edge.
    write(q(
        "MATCH (a:Alternative {id: $rootAlt}) SET a.episodeId = 'ep-1'",
    ))
    .await;
    // ...which is also a binding that disagrees with its edges (EPI-3) and an Episode that is
    // not the derived one (EPI-1).
    assert_eq!(
        findings_for(&root_alt).await,
        vec!["TURN-7", "EPI-3", "EPI-1"]
    );
    write(q("MATCH (a:Alternative {id: $rootAlt}) REMOVE a.episodeId")).await;
    // OWN-1: a second owner.
    write(q(
        "MATCH (c:Conversation {id: $c}), (u:User {id: 'admin'}) CREATE (c)-[:OWNED_BY]->(u)",
    ))
    .await;
    assert_eq!(findings_for(&c).await, vec!["OWN-1"]);
    write(q(
        "MATCH (c:Conversation {id: $c})-[o:OWNED_BY]->(:User {id: 'admin'}) DELETE o",
    ))
    .await;
    for id in [&c, &root, &root_alt, &child, &child_alt] {
        assert!(
            findings_for(id).await.is_empty(),
            "{id} should be clean again"
        );
    }
}

/// EPI-3: content whose outbox item vanished (it would never be ingested) and content recorded
/// without a binding are reported; ENT-2: an active entity its conversation's owner cannot see;
/// ENT-3: an entity said to come from Graphiti that no Episode mentions.
#[tokio::test]
async fn epi_3_ent_2_ent_3_check_reports_lost_ingestion_foreign_and_orphan_entities() {
    let u = user().await;
    let (c, _root, root_alt, _child, child_alt) = small_conversation(&u).await;
    let q = |text: &str| {
        aiden_graph_query(text)
            .param("rootAlt", root_alt.as_str())
            .param("childAlt", child_alt.as_str())
            .param("c", c.as_str())
    };
    assert!(findings_for(&root_alt).await.is_empty());
    write(q(
        "MATCH (o:IngestItem {id: 'message:' + $rootAlt}) DELETE o",
    ))
    .await;
    assert_eq!(findings_for(&root_alt).await, vec!["EPI-3"]);
    write(q(
        "MATCH (a:Alternative {id: $rootAlt}) CREATE (:IngestItem {id: 'message:' + a.id, \
         kind: 'message', targetId: a.id, conversationId: a.conversationId, state: 'new', \
         createdAt: a.createdAt})",
    ))
    .await;
    assert!(findings_for(&root_alt).await.is_empty());
    write(q("MATCH (a:Alternative {id: $childAlt}) REMOVE a.binding")).await;
    assert_eq!(findings_for(&child_alt).await, vec!["EPI-3"]);
    write(q(
        "MATCH (a:Alternative {id: $childAlt}) SET a.binding = 'pending'",
    ))
    .await;
    assert!(findings_for(&child_alt).await.is_empty());
    // An entity another user created, made active here behind the API's back.
    let other = user().await;
    let e = other
        .post(
            "/v1/entities",
            json!({"name": "Secret project", "summary": "not yours", "category": "Project"}),
        )
        .await;
    let uuid = e.ok(201)["uuid"].as_str().unwrap().to_owned();
    let edge = format!("{c} -> {uuid}");
    write(
        q("MATCH (c:Conversation {id: $c}), (n:Entity {uuid: $u}) CREATE (c)-[:HAS_ACTIVE_ENTITY {addedAt: 't'}]->(n)")
            .param("u", uuid.as_str()),
    )
    .await;
    assert_eq!(findings_for(&edge).await, vec!["ENT-2"]);
    // Through the API the owner cannot even see it (OWN-2), let alone activate it.
    let refused = u
        .put(&format!("/v1/conversations/{c}/entities/{uuid}"), json!({}))
        .await;
    assert_eq!(refused.code(), "NOT_FOUND", "{:?}", refused.body);
    write(
        q("MATCH (:Conversation {id: $c})-[h:HAS_ACTIVE_ENTITY]->(:Entity {uuid: $u}) DELETE h")
            .param("u", uuid.as_str()),
    )
    .await;
    assert!(findings_for(&edge).await.is_empty());
    // ENT-3: a mirrored entity without the MENTIONS from the Episode it came from.
    let orphan = aiden_tests::unique("ent");
    write(
        q("CREATE (:Entity {uuid: $u, name: 'Orphan', source: 'graphiti', groupId: $c})")
            .param("u", orphan.as_str()),
    )
    .await;
    assert_eq!(findings_for(&orphan).await, vec!["ENT-3"]);
    write(
        q(
            "MATCH (a:Alternative {id: $rootAlt}), (n:Entity {uuid: $u}) \
           CREATE (a)-[:HAS_CONTENT {source: 'message'}]->(:Episodic {uuid: $e})-[:MENTIONS]->(n)",
        )
        .param("u", orphan.as_str())
        .param("e", aiden_tests::unique("ep").as_str()),
    )
    .await;
    assert!(!findings_for(&orphan).await.contains(&"ENT-3"));
    write(
        q("MATCH (a:Alternative {id: $rootAlt})-[h:HAS_CONTENT]->(e:Episodic)-[m:MENTIONS]->(n:Entity {uuid: $u}) \
           DELETE h, m, e, n")
            .param("u", orphan.as_str()),
    )
    .await;
    assert!(findings_for(&root_alt).await.is_empty());
}

/// GRAPH-1 / GRAPH-2 / GRAPH-3: an agent Alternative's and a Summary's GENERATED_BY, and an audit
/// record's HAS_AUDIT, agree with the ids they carry; a missing or extra edge is reported under
/// its rule and stops being reported once repaired.
#[tokio::test]
async fn graph_1_2_3_check_reports_reference_edges_that_disagree_with_their_ids() {
    let u = user().await;
    let service = fixtures::rest_service(&u, false).await;
    let tool = fixtures::rest_tool(&u, &service).await;
    let process = fixtures::create(
        &u,
        "processes",
        json!({"id": unique("agent"), "name": "a", "shared": false,
               "initialContext": ["conversationId", "turnId", "alternativeId", "userMessage", "workingMemory"],
               "steps": [{"id": "ask", "tool": tool, "inputs": {"query": "{{userMessage}}"}}]}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (c, root, root_alt, _, _) = small_conversation(&u).await;
    let g = u
        .post(
            &format!("/v1/conversations/{c}/agent-turns"),
            json!({"processId": process, "parentTurnId": root}),
        )
        .await
        .ok(202)
        .clone();
    let (alt, run) = (
        g["alternativeId"].as_str().unwrap().to_owned(),
        g["runId"].as_str().unwrap().to_owned(),
    );
    u.settled_run(&run).await;
    let summary = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "s", "coversUpToTurnId": root, "sources": [root_alt], "runId": run}),
        )
        .await
        .ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let called: Vec<serde_json::Value> = aiden_tests::graph_rows(
        aiden_graph_query(
            "MATCH (:Run {id: $run})-[:HAS_STEP_RUN]->(sr:StepRun)
             WHERE sr.workerId IS NOT NULL AND sr.inputHash IS NOT NULL AND sr.durationMs IS NOT NULL
             RETURN sr.id AS id",
        )
        .param("run", run.as_str()),
    )
    .await;
    assert!(!called.is_empty(), "a tool call is audited on its StepRun");
    // Tool calls are audited on their StepRun; an audit record is an agent step's
    // pipeline record (AGT-16), written here as the engine writes one.
    let audit = unique("audit");
    write(
        aiden_graph_query(
            "MATCH (sr:StepRun {id: $sr}) CREATE (sr)-[:HAS_AUDIT]->(:ToolCallAudit {id: $audit,
             runId: sr.runId, stepRunId: sr.id, kind: 'pipeline', status: 'failed', at: sr.finishedAt})",
        )
        .param("sr", called[0]["id"].as_str().unwrap())
        .param("audit", audit.as_str()),
    )
    .await;
    for id in [&alt, &summary, &audit] {
        assert!(findings_for(id).await.is_empty(), "{id} should start clean");
    }
    let q = |text: &str| {
        aiden_graph_query(text)
            .param("alt", alt.as_str())
            .param("summary", summary.as_str())
            .param("audit", audit.as_str())
            .param("run", run.as_str())
    };
    write(q(
        "MATCH (:Alternative {id: $alt})-[g:GENERATED_BY]->() DELETE g",
    ))
    .await;
    assert_eq!(findings_for(&alt).await, vec!["GRAPH-1"]);
    write(q(
        "MATCH (a:Alternative {id: $alt}), (r:Run {id: $run}) CREATE (a)-[:GENERATED_BY]->(r)",
    ))
    .await;
    assert!(findings_for(&alt).await.is_empty());
    // A second edge to another run is as wrong as none.
    write(q("MATCH (s:Summary {id: $summary}), (r:Run) WHERE r.id <> $run WITH s, r LIMIT 1 CREATE (s)-[:GENERATED_BY]->(r)")).await;
    assert_eq!(findings_for(&summary).await, vec!["GRAPH-2"]);
    write(q(
        "MATCH (:Summary {id: $summary})-[g:GENERATED_BY]->(r:Run) WHERE r.id <> $run DELETE g",
    ))
    .await;
    assert!(findings_for(&summary).await.is_empty());
    write(q(
        "MATCH (:StepRun)-[h:HAS_AUDIT]->(:ToolCallAudit {id: $audit}) DELETE h",
    ))
    .await;
    assert_eq!(findings_for(&audit).await, vec!["GRAPH-3"]);
    write(q("MATCH (x:ToolCallAudit {id: $audit}), (sr:StepRun {id: x.stepRunId}) CREATE (sr)-[:HAS_AUDIT]->(x)")).await;
    assert!(findings_for(&audit).await.is_empty());
}

/// INT-1 / SUM-1: check reports a carousel note outside the carousel and a Summary whose level
/// is not one above its sources'; the same records made through the API are clean.
#[tokio::test]
async fn int_1_sum_1_check_reports_bad_carousel_notes_and_summary_levels() {
    let u = user().await;
    let note = u
        .post("/v1/introspections", json!({"content": "a note"}))
        .await
        .ok(201)
        .clone();
    let note_id = note["id"].as_str().unwrap().to_owned();
    assert_eq!(findings_for(&note_id).await, Vec::<&str>::new());
    write(
        aiden_graph_query("MATCH (i:Introspection {id: $id}) SET i.carouselPosition = 99")
            .param("id", note_id.as_str()),
    )
    .await;
    assert_eq!(findings_for(&note_id).await, ["INT-1"]);
    // Put it back: `aiden check` runs over the whole shared graph in other tests.
    write(
        aiden_graph_query("MATCH (i:Introspection {id: $id}) SET i.carouselPosition = 0")
            .param("id", note_id.as_str()),
    )
    .await;
    assert_eq!(findings_for(&note_id).await, Vec::<&str>::new());

    let c = u.post("/v1/conversations", json!({})).await.ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let turn = u
        .post(
            &format!("/v1/conversations/{c}/turns"),
            json!({"speaker": "user", "content": "hello"}),
        )
        .await
        .ok(201)
        .clone();
    let summary = u
        .post(
            &format!("/v1/conversations/{c}/summaries"),
            json!({"content": "a greeting", "coversUpToTurnId": turn["id"],
                   "sources": [turn["alternatives"][0]["id"]]}),
        )
        .await
        .ok(201)
        .clone();
    let summary_id = summary["id"].as_str().unwrap().to_owned();
    assert_eq!(findings_for(&summary_id).await, Vec::<&str>::new());
    write(
        aiden_graph_query("MATCH (s:Summary {id: $id}) SET s.compressionLevel = 3")
            .param("id", summary_id.as_str()),
    )
    .await;
    assert_eq!(findings_for(&summary_id).await, ["SUM-1"]);
    write(
        aiden_graph_query("MATCH (s:Summary {id: $id}) SET s.compressionLevel = 1")
            .param("id", summary_id.as_str()),
    )
    .await;
    assert_eq!(findings_for(&summary_id).await, Vec::<&str>::new());
}

/// EXEC-2 (audit; the lean journal): a StepRun that a worker's result settled is the
/// audit record of its tool call. `aiden check` reports one that lost its finish time, or whose
/// retried attempts' facts are out of step (as many times, durations and records, `failedAt`),
/// and stops once each is repaired.
#[tokio::test]
async fn exec_2_check_reports_a_step_run_without_its_audit_facts() {
    let u = user().await;
    let service = fixtures::rest_service(&u, false).await;
    let tool = fixtures::rest_tool(&u, &service).await;
    let process = fixtures::create(
        &u,
        "processes",
        json!({"id": unique("audited"), "name": "a", "shared": false,
               "steps": [{"id": "ask", "tool": tool, "inputs": {"query": "q"}}]}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = u.start_run(&process, json!({})).await;
    u.settled_run(&run).await;
    let rows: Vec<serde_json::Value> = aiden_tests::graph_rows(
        aiden_graph_query(
            "MATCH (:Run {id: $run})-[:HAS_STEP_RUN]->(sr:StepRun)
             WHERE sr.workerId IS NOT NULL AND sr.status IN ['completed', 'failed']
             RETURN sr.id AS id",
        )
        .param("run", run.as_str()),
    )
    .await;
    let sr = rows[0]["id"]
        .as_str()
        .expect("a step run a worker settled")
        .to_owned();
    assert!(
        findings_for(&sr).await.is_empty(),
        "{sr} should start clean"
    );
    let q = |text: &str| aiden_graph_query(text).param("sr", sr.as_str());
    write(q(
        "MATCH (sr:StepRun {id: $sr}) SET sr.keptAt = sr.finishedAt REMOVE sr.finishedAt",
    ))
    .await;
    assert_eq!(findings_for(&sr).await, vec!["EXEC-2"]);
    write(q(
        "MATCH (sr:StepRun {id: $sr}) SET sr.finishedAt = sr.keptAt REMOVE sr.keptAt",
    ))
    .await;
    assert!(findings_for(&sr).await.is_empty());
    // A retried attempt whose duration and record were not appended with its time.
    write(q(
        "MATCH (sr:StepRun {id: $sr}) SET sr.keptRetries = coalesce(sr.retriedAt, []),
         sr.retriedAt = coalesce(sr.retriedAt, []) + sr.finishedAt",
    ))
    .await;
    assert_eq!(findings_for(&sr).await, vec!["EXEC-2"]);
    write(q("MATCH (sr:StepRun {id: $sr})
         SET sr.retriedAt = CASE WHEN size(sr.keptRetries) = 0 THEN null ELSE sr.keptRetries END
         REMOVE sr.keptRetries"))
    .await;
    assert!(findings_for(&sr).await.is_empty(), "repaired");
}

/// ENT-5: a merge leaves a tombstone without edges that its survivor lists. `aiden check`
/// reports a tombstone with an edge left, one whose survivor does not list it, and a survivor
/// listing a uuid that is no tombstone of its own; and stops once each is repaired.
#[tokio::test]
async fn ent_5_check_reports_a_merge_that_left_an_edge_or_a_broken_reference() {
    let (survivor, merged, other) = (unique("ent"), unique("ent"), unique("ent"));
    let q = |text: &str| {
        aiden_graph_query(text)
            .param("s", survivor.as_str())
            .param("m", merged.as_str())
            .param("o", other.as_str())
    };
    write(q(
        "CREATE (:Entity {uuid: $s, name: 'Ada', mergedFrom: [$m]}),
                (:MergedEntity {uuid: $m, name: 'Ada L', mergedInto: $s}),
                (:Entity {uuid: $o, name: 'Babbage'})",
    ))
    .await;
    // Other rules see these hand-made Entities too (no creator, no mention): only ENT-5 counts.
    let ent_5 = |id: String| async move {
        findings_for(&id)
            .await
            .into_iter()
            .filter(|f| *f == "ENT-5")
            .count()
    };
    assert_eq!(ent_5(merged.clone()).await, 0, "a clean merge");
    assert_eq!(ent_5(survivor.clone()).await, 0);
    // An edge left on the tombstone.
    write(q(
        "MATCH (m:MergedEntity {uuid: $m}), (o:Entity {uuid: $o}) CREATE (m)-[:RELATES_TO]->(o)",
    ))
    .await;
    assert_eq!(findings_for(&merged).await, vec!["ENT-5"]);
    write(q("MATCH (:MergedEntity {uuid: $m})-[r]-() DELETE r")).await;
    assert_eq!(ent_5(merged.clone()).await, 0);
    // A survivor that does not list it, and lists a uuid that is no tombstone of its own.
    write(q("MATCH (s:Entity {uuid: $s}) SET s.mergedFrom = [$o]")).await;
    assert_eq!(findings_for(&merged).await, vec!["ENT-5"]);
    assert_eq!(ent_5(survivor.clone()).await, 1);
    write(q("MATCH (s:Entity {uuid: $s}) SET s.mergedFrom = [$m]")).await;
    assert_eq!(ent_5(merged.clone()).await, 0, "repaired");
    assert_eq!(ent_5(survivor.clone()).await, 0);
    write(q("MATCH (n) WHERE n.uuid IN [$s, $m, $o] DETACH DELETE n")).await;
}

/// Neo4j reads at read committed: a node another transaction deletes while a statement reads
/// it comes back with every property null, so it passes any audit's `IS NULL` test. `aiden
/// check` runs beside every other writer; its statements skip such rows instead of failing to
/// decode a null id (the failure this test first caught in CI, under the suite's own deletes).
#[tokio::test]
async fn check_skips_nodes_deleted_while_it_reads() {
    #[derive(serde::Deserialize)]
    struct MaybeId {
        id: Option<String>,
    }
    let graph = aiden_graph::Graph::connect(&server().graph)
        .await
        .expect("graph");
    let label = format!("DeletedWhileRead_{}", unique("x").replace('-', "_"));
    let probe = format!("MATCH (n:{label}) WHERE n.kept IS NULL RETURN n.id AS id");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = tokio::spawn({
        let (graph, stop, label) = (graph.clone(), stop.clone(), label.clone());
        async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for q in [
                    format!("UNWIND range(1, 200) AS i CREATE (:{label} {{id: toString(i), kept: true}})"),
                    format!("MATCH (n:{label}) DETACH DELETE n"),
                ] {
                    let mut tx = graph.begin().await.expect("tx");
                    tx.run(neo4rs::query(&q)).await.expect("churn");
                    tx.commit().await.expect("commit");
                }
            }
        }
    });
    // Until plain reads have met deleted nodes ten times (so the race is frequent in this run),
    // the live read of the same statement, alternating with them, must never return one nor
    // fail.
    let (mut met, mut live_reads) = (0, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while met < 10 && std::time::Instant::now() < deadline {
        // A node deleted between its match and its read can also fail the statement
        // (EntityNotFound, transient: the audit's transaction is then retried); such a read
        // counts for nothing here.
        let plain: Result<Vec<MaybeId>, _> = graph.read_rows(neo4rs::query(&probe)).await;
        match plain {
            Ok(rows) => met += usize::from(rows.iter().any(|r| r.id.is_none())),
            Err(e) => assert!(e.is_transient(), "plain read: {e}"),
        }
        let mut tx = graph.begin().await.expect("tx");
        match tx
            .live_rows::<aiden_graph::IdRow>(neo4rs::query(&probe))
            .await
        {
            Ok(live) => assert!(
                live.is_empty(),
                "live nodes are kept: only deleted ones match"
            ),
            Err(e) => assert!(e.is_transient(), "live read: {e}"),
        }
        live_reads += 1;
        let _ = tx.rollback().await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.await.expect("churn task");
    write(neo4rs::query(&format!("MATCH (n:{label}) DETACH DELETE n"))).await;
    assert_eq!(
        met, 10,
        "reads that met a node deleted under them, of {live_reads}"
    );
}
