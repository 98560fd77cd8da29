use super::*;

fn row(id: &str, kind: HitKind, signal: &str, score: Option<f64>, conv: &str) -> SignalRow {
    SignalRow {
        id: id.into(),
        kind,
        signal: signal.into(),
        score,
        via: None,
        name: None,
        content: format!("content of {id}"),
        created_at: None,
        sources: vec![Source {
            conversation_id: Some(conv.into()),
            alternative_id: Some(id.into()),
            ..Source::default()
        }],
        group: None,
        indexed: None,
        superseded_by: None,
        supersedes: None,
    }
}

#[test]
fn srch_1_a_search_needs_text_known_kinds_and_a_bounded_limit() {
    let ok = check_search(Some(" dogs "), None, Some("episode,fact,episode"), Some(5)).unwrap();
    assert_eq!(ok.q, "dogs");
    assert_eq!(ok.kinds, [HitKind::Episode, HitKind::Fact]);
    assert_eq!(ok.limit, 5);
    assert_eq!(
        check_search(Some("x"), None, None, None)
            .unwrap()
            .kinds
            .len(),
        6
    );
    for (q, kinds, limit, path) in [
        (None, None, None, "/q"),
        (Some("  "), None, None, "/q"),
        (Some("x"), Some("episode,pets"), None, "/kinds"),
        (Some("x"), None, Some(0), "/limit"),
        (Some("x"), None, Some(51), "/limit"),
    ] {
        let e = check_search(q, None, kinds, limit).unwrap_err();
        let text = format!("{e:?}");
        assert!(
            text.contains("SRCH-1") && text.contains(path),
            "{q:?} {kinds:?} {limit:?}: {text}"
        );
    }
    let long = "a".repeat(MAX_QUERY_CHARS + 1);
    assert!(check_search(Some(&long), None, None, None).is_err());
}

#[test]
fn srch_1_the_full_text_query_carries_words_only() {
    assert_eq!(
        text_query("what's \"my\" dog's (name)? AND *"),
        "what s my dog s name and"
    );
    assert_eq!(text_query("!!!"), "");
}

/// Neo4j's normalised score of a cosine similarity.
fn norm(cos: f64) -> Option<f64> {
    Some((1.0 + cos) / 2.0)
}

#[test]
fn fusion_ranks_by_meaning_and_words_break_near_ties() {
    let rows = vec![
        row("strong", HitKind::Episode, "vector", norm(0.8), "c1"),
        row("near-a", HitKind::Episode, "vector", norm(0.50), "c1"),
        row("near-b", HitKind::Episode, "vector", norm(0.48), "c1"),
        row("near-b", HitKind::Episode, "text", Some(2.0), "c1"),
        row("weak", HitKind::Episode, "vector", norm(0.2), "c1"),
        // Words only, the best of them: counted at the least similarity the vectors returned.
        row("words", HitKind::Episode, "text", Some(4.0), "c1"),
    ];
    let hits = fuse(rows, &HashMap::new(), 10, true);
    let order: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(order, ["strong", "near-b", "near-a", "words", "weak"]);
    assert!(
        (hits[0].similarity.unwrap() - 0.8).abs() < 1e-9,
        "cosine = 2s - 1"
    );
    assert!((hits[1].score - (0.48 + 0.1 * 0.5)).abs() < 1e-9);
    assert_eq!(hits[1].text_score, Some(2.0));
    assert!(hits[3].similarity.is_none());
    assert!((hits[3].score - (0.2 + 0.1)).abs() < 1e-9);
    let two = vec![
        row("a", HitKind::Episode, "vector", norm(0.9), "c1"),
        row("b", HitKind::Episode, "vector", norm(0.8), "c1"),
    ];
    assert_eq!(fuse(two, &HashMap::new(), 1, true).len(), 1);
}

#[test]
fn without_meaning_words_decide() {
    let rows = vec![
        row("a", HitKind::Episode, "text", Some(1.0), "c1"),
        row("b", HitKind::Episode, "text", Some(3.0), "c1"),
    ];
    let hits = fuse(rows, &HashMap::new(), 10, true);
    assert_eq!(hits[0].id, "b");
    assert!(hits.iter().all(|h| h.similarity.is_none()));
}

#[test]
fn fusion_adds_the_graph_by_the_rank_of_the_entity_that_led_there() {
    let mut g1 = row("x", HitKind::Episode, "graph", None, "c1");
    g1.via = Some("e2".into());
    let mut g2 = row("y", HitKind::Episode, "graph", None, "c1");
    g2.via = Some("e1".into());
    let rank = HashMap::from([("e1".to_string(), 1), ("e2".to_string(), 2)]);
    let hits = fuse(
        vec![
            g1,
            g2,
            row("x", HitKind::Episode, "vector", norm(0.5), "c1"),
            row("y", HitKind::Episode, "vector", norm(0.47), "c1"),
        ],
        &rank,
        10,
        true,
    );
    // y: 0.47 + 0.1 / 1 beats x: 0.5 + 0.1 / 2.
    assert_eq!(hits[0].id, "y");
    assert_eq!(hits[0].via_entities, ["e1"]);
}

fn hit(id: &str, kind: HitKind, similarity: f64, conv: &str, alt: Option<&str>) -> Hit {
    let source = Source {
        conversation_id: Some(conv.into()),
        alternative_id: alt.map(str::to_owned),
        ..Source::default()
    };
    Hit {
        id: id.into(),
        kind,
        score: 0.0,
        similarity: Some(similarity),
        text_score: None,
        via_entities: Vec::new(),
        found_by: vec![FoundBy::Meaning],
        indexed: None,
        name: None,
        text: "twelve words of content for the token estimate to count here".into(),
        created_at: None,
        origin: source.clone(),
        sources: vec![source],
        group: None,
        superseded_by: None,
        supersedes: None,
    }
}

#[test]
fn srch_3_retrieved_context_never_takes_a_sibling_branch_of_the_current_conversation() {
    let on_path: HashSet<String> = ["old", "shown"].map(String::from).into();
    let shown: HashSet<String> = ["shown"].map(String::from).into();
    let hits = vec![
        // The best match of all: an inactive sibling branch of this conversation.
        hit("sibling", HitKind::Episode, 0.95, "here", Some("sibling")),
        hit("shown", HitKind::Episode, 0.9, "here", Some("shown")),
        hit("old", HitKind::Episode, 0.5, "here", Some("old")),
        hit("fact-here", HitKind::Fact, 0.9, "here", Some("old")),
        hit("other", HitKind::Episode, 0.7, "elsewhere", Some("o1")),
        hit("fact", HitKind::Fact, 0.8, "elsewhere", Some("o2")),
        // A fact of this conversation drawn from a sibling branch's Summary: no Alternative
        // among its sources, but its group is this conversation.
        Hit {
            sources: Vec::new(),
            group: Some("here".into()),
            ..hit("summary-fact", HitKind::Fact, 0.99, "here", None)
        },
        hit("weak", HitKind::Episode, 0.1, "elsewhere", Some("o3")),
        // SRCH-4: a memory kept in this very conversation is the user's, not a branch's.
        hit("memory", HitKind::Memory, 0.6, "here", None),
    ];
    let policy = ContextPolicy {
        max_tokens: 1000,
        min_similarity: 0.3,
    };
    let got = retrieved_context(hits, "here", &on_path, &shown, policy);
    let ids: Vec<&str> = got.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["fact", "other", "memory", "old"],
        "ordered by similarity"
    );
}

#[test]
fn retrieved_context_stays_within_its_token_budget() {
    let hits: Vec<Hit> = (0..10)
        .map(|i| {
            hit(
                &format!("h{i}"),
                HitKind::Episode,
                0.9 - i as f64 / 100.0,
                "elsewhere",
                Some("a"),
            )
        })
        .collect();
    let each = estimate_text_tokens(&hits[0].text);
    let policy = ContextPolicy {
        max_tokens: each * 3,
        min_similarity: 0.0,
    };
    let got = retrieved_context(hits, "here", &HashSet::new(), &HashSet::new(), policy);
    assert_eq!(got.len(), 3);
    assert_eq!(got.iter().map(|r| r.tokens).sum::<u64>(), each * 3);
    assert_eq!(got[0].id, "h0");
}

#[test]
fn srch_6_near_zero_and_negative_meaning_alone_is_not_listed() {
    let rows = vec![
        row("close", HitKind::Episode, "vector", norm(0.45), "c1"),
        row(
            "edge",
            HitKind::Episode,
            "vector",
            norm(MIN_SIMILARITY),
            "c1",
        ),
        row("faint", HitKind::Episode, "vector", norm(0.12), "c1"),
        row("zero", HitKind::Episode, "vector", norm(0.0), "c1"),
        row("opposite", HitKind::Episode, "vector", norm(-0.3), "c1"),
    ];
    let hits = fuse(rows, &HashMap::new(), 10, true);
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["close", "edge"]);
    assert!(hits.iter().all(|h| h.score > 0.0));
    assert!(hits.iter().all(|h| h.found_by == [FoundBy::Meaning]));
}

#[test]
fn srch_6_a_weak_word_match_alone_is_not_listed_but_an_entity_or_words_keep_a_faint_meaning() {
    let mut via = row("about-e", HitKind::Episode, "graph", None, "c1");
    via.via = Some("e1".into());
    let rows = vec![
        row("rare-words", HitKind::Episode, "text", Some(4.0), "c1"),
        row(
            "quarter",
            HitKind::Episode,
            "text",
            Some(4.0 * MIN_TEXT_SHARE),
            "c1",
        ),
        // Shares only a common word: a tenth of the best full-text score.
        row("common-word", HitKind::Episode, "text", Some(0.4), "c1"),
        // A faint meaning, but its words match well: listed, by words only.
        row("faint-named", HitKind::Episode, "vector", norm(0.1), "c1"),
        row("faint-named", HitKind::Episode, "text", Some(3.0), "c1"),
        // A faint meaning and only a common word: not listed.
        row("faint-common", HitKind::Episode, "vector", norm(0.1), "c1"),
        row("faint-common", HitKind::Episode, "text", Some(0.4), "c1"),
        // A faint meaning, found through an Entity the query names: listed.
        row("about-e", HitKind::Episode, "vector", norm(0.1), "c1"),
        via,
    ];
    let rank = HashMap::from([("e1".to_string(), 1)]);
    let hits = fuse(rows, &rank, 10, true);
    let by = |id: &str| hits.iter().find(|h| h.id == id).map(|h| h.found_by.clone());
    assert_eq!(by("rare-words"), Some(vec![FoundBy::Words]));
    assert_eq!(by("quarter"), Some(vec![FoundBy::Words]));
    assert_eq!(by("faint-named"), Some(vec![FoundBy::Words]));
    assert_eq!(by("about-e"), Some(vec![FoundBy::Entity]));
    assert_eq!(by("common-word"), None);
    assert_eq!(by("faint-common"), None);
    assert_eq!(hits.len(), 4);
    assert!(
        hits.iter().all(|h| h.score > 0.0),
        "no negative score listed"
    );
}

#[test]
fn srch_6_a_hit_says_which_signals_found_it_and_whether_it_is_indexed() {
    let mut fresh = row("fresh", HitKind::Memory, "text", Some(2.0), "c1");
    fresh.indexed = Some(false);
    let mut old_v = row("old", HitKind::Episode, "vector", norm(0.6), "c1");
    old_v.indexed = Some(true);
    let mut old_t = row("old", HitKind::Episode, "text", Some(2.0), "c1");
    old_t.indexed = Some(true);
    let mut old_g = row("old", HitKind::Episode, "graph", None, "c1");
    old_g.via = Some("e1".into());
    old_g.indexed = Some(true);
    let rank = HashMap::from([("e1".to_string(), 1)]);
    // The words-only hit counts the least similarity returned (0.6), never below 0.
    let hits = fuse(vec![fresh, old_v, old_t, old_g], &rank, 10, true);
    assert_eq!(hits[0].id, "old");
    assert_eq!(
        hits[0].found_by,
        [FoundBy::Meaning, FoundBy::Words, FoundBy::Entity]
    );
    assert_eq!(hits[0].indexed, Some(true));
    assert_eq!(hits[1].id, "fresh");
    assert_eq!(hits[1].found_by, [FoundBy::Words]);
    assert_eq!(hits[1].indexed, Some(false));
    let json = serde_json::to_value(&hits[1]).unwrap();
    assert_eq!(json["foundBy"], serde_json::json!(["words"]));
    assert_eq!(json["indexed"], serde_json::json!(false));
    // Only negative similarities returned: a words-only hit is not pushed below 0.
    let hits = fuse(
        vec![
            row("w", HitKind::Episode, "text", Some(1.0), "c1"),
            row("neg", HitKind::Episode, "vector", norm(-0.2), "c1"),
        ],
        &HashMap::new(),
        10,
        true,
    );
    assert_eq!(hits.len(), 1);
    assert!((hits[0].score - 0.1).abs() < 1e-9);
}

fn version(id: &str, text: &str, conv: &str) -> Version {
    Version {
        id: id.into(),
        text: text.into(),
        conversation_id: Some(conv.into()),
        turn_id: None,
        created_at: None,
    }
}

#[test]
fn srch_7_a_superseded_message_ranks_below_the_one_that_superseded_it_unless_asked_about_the_past()
{
    // "Which city is my home now?" is closer to "I live in Lisbon" (0.62) than to "I moved
    // from Lisbon to Porto" (0.55).
    let rows = || {
        let mut old = row("lisbon", HitKind::Episode, "vector", norm(0.62), "c1");
        old.superseded_by = Some(version("porto", "I moved from Lisbon to Porto.", "c2"));
        let mut new = row("porto", HitKind::Episode, "vector", norm(0.55), "c2");
        new.supersedes = Some(version("lisbon", "I live in Lisbon.", "c1"));
        let other = row("cat", HitKind::Episode, "vector", norm(0.58), "c3");
        vec![old, new, other]
    };
    let now = fuse(rows(), &HashMap::new(), 10, true);
    let ids: Vec<&str> = now.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        ["porto", "lisbon", "cat"],
        "the current version first, its history under it"
    );
    assert_eq!(now[1].superseded_by.as_ref().unwrap().id, "porto");
    assert_eq!(now[0].supersedes.as_ref().unwrap().id, "lisbon");
    let json = serde_json::to_value(&now[1]).unwrap();
    assert_eq!(
        json["supersededBy"]["text"],
        "I moved from Lisbon to Porto."
    );
    // Its current version not found: the old message loses the penalty (0.62 → 0.47).
    let alone: Vec<SignalRow> = rows().into_iter().filter(|r| r.id != "porto").collect();
    let hits = fuse(alone, &HashMap::new(), 10, true);
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["cat", "lisbon"]);
    assert!((hits[1].score - (0.62 - SUPERSEDED_PENALTY)).abs() < 1e-9);
    // About the past: every hit keeps its own rank.
    let past = fuse(rows(), &HashMap::new(), 10, false);
    let ids: Vec<&str> = past.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["lisbon", "cat", "porto"]);
}

#[test]
fn srch_7_retrieved_context_shows_a_superseded_message_only_as_the_history_of_the_current_one() {
    let policy = ContextPolicy {
        max_tokens: 400,
        min_similarity: 0.3,
    };
    let mut old = hit("lisbon", HitKind::Episode, 0.7, "c1", Some("lisbon"));
    old.text = "I live in Lisbon.".into();
    old.superseded_by = Some(version("porto", "I moved from Lisbon to Porto.", "c2"));
    let mut new = hit("porto", HitKind::Episode, 0.5, "c2", Some("porto"));
    new.text = "I moved from Lisbon to Porto.".into();
    new.supersedes = Some(version("lisbon", "I live in Lisbon.", "c1"));
    let none = HashSet::new();
    let items = retrieved_context(vec![old.clone(), new.clone()], "c9", &none, &none, policy);
    assert_eq!(items.len(), 1, "one item for both versions: {items:?}");
    assert_eq!(items[0].id, "porto");
    assert_eq!(
        items[0].text,
        "I moved from Lisbon to Porto. (was: I live in Lisbon.)"
    );
    assert_eq!(items[0].source.alternative_id.as_deref(), Some("porto"));
    // Only the old one found: still its current version.
    let items = retrieved_context(vec![old.clone()], "c9", &none, &none, policy);
    assert_eq!(items[0].id, "porto");
    // The current version is a sibling branch of the conversation answered (SRCH-3): not
    // shown, and the old message stays as it is.
    let mut sibling = old.clone();
    sibling.superseded_by = Some(version("porto", "I moved from Lisbon to Porto.", "c9"));
    let items = retrieved_context(vec![sibling.clone()], "c9", &none, &none, policy);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, "lisbon");
    assert_eq!(items[0].text, "I live in Lisbon.");
    // On the path and shown already: nothing more to say.
    let path = HashSet::from(["porto".to_string()]);
    let items = retrieved_context(vec![sibling], "c9", &path, &path, policy);
    assert!(items.is_empty(), "{items:?}");
}

#[test]
fn srch_7_a_chain_of_versions_ranks_newest_first_and_a_penalised_hit_is_never_below_zero() {
    // Lisbon ← Porto ← Madrid: the oldest matches the question best.
    let mut lisbon = row("lisbon", HitKind::Episode, "vector", norm(0.9), "c1");
    lisbon.superseded_by = Some(version("porto", "I moved to Porto.", "c2"));
    let mut porto = row("porto", HitKind::Episode, "vector", norm(0.5), "c2");
    porto.superseded_by = Some(version("madrid", "I moved to Madrid.", "c3"));
    let madrid = row("madrid", HitKind::Episode, "vector", norm(0.4), "c3");
    let other = row("cat", HitKind::Episode, "vector", norm(0.7), "c4");
    let hits = fuse(
        vec![lisbon, porto, madrid, other],
        &HashMap::new(),
        10,
        true,
    );
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["madrid", "porto", "lisbon", "cat"]);
    // Superseded by a message not found, a weak hit would fall below 0: not listed (SRCH-6).
    let mut weak = row("weak", HitKind::Episode, "vector", norm(0.25), "c1");
    weak.superseded_by = Some(version("gone", "not found", "c2"));
    let strong = row("strong", HitKind::Episode, "vector", norm(0.6), "c4");
    let hits = fuse(vec![weak, strong], &HashMap::new(), 10, true);
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["strong", "weak"], "0.25 − 0.15 is still above 0");
    // Found by words only (0.1 for the best words), then 0.15 off: below 0, not listed.
    let mut worded = row("worded", HitKind::Episode, "text", Some(3.0), "c1");
    worded.superseded_by = Some(version("gone", "not found", "c2"));
    let hits = fuse(vec![worded.clone()], &HashMap::new(), 10, true);
    assert!(hits.is_empty(), "{hits:?}");
    // About the past, it keeps its own score and is listed.
    assert_eq!(fuse(vec![worded], &HashMap::new(), 10, false).len(), 1);
}
