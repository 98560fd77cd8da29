//! Forgetting a memory (SRCH-4) forgets what Graphiti kept of it too: its Episode's text, the
//! facts only that Episode supports and the Entities only it mentions. Graphiti's binding and
//! extraction are planted in the graph as graphiti-core writes them (no Graphiti service runs
//! in this suite); the API's DELETE does the rest.

use aiden_domain::knowledge::episode::{episode_name, episode_uuid, EpisodeSource};
use aiden_tests::{aiden_graph_query, graph_rows, graph_write, unique, user};
use serde_json::{json, Value};

#[tokio::test]
async fn srch_4_forgetting_a_memory_blanks_its_episode_and_drops_what_only_it_supports() {
    let u = user().await;
    let fact = "my sister Ines lives in Porto";
    let m = u.post("/v1/memories", json!({"content": fact})).await;
    let memory = m.ok(201)["id"].as_str().unwrap().to_owned();
    let episode = episode_uuid(EpisodeSource::Memory, &memory);
    let [ines, porto, cello, other, only_here, also_here, shared] = [
        "ines", "porto", "cello", "other", "fact-a", "fact-b", "fact-c",
    ]
    .map(unique);
    // Bound and extracted: Porto only this Episode mentions, Ines and the cello another one
    // too; two facts only this Episode supports (one between Entities that stay), one it
    // shares with the other.
    graph_write(
        aiden_graph_query(
            "MATCH (m:Memory {id: $memory})
             SET m.binding = 'extracted', m.episodeId = $episode
             CREATE (m)-[:HAS_CONTENT]->(e:Episodic {uuid: $episode, name: $name,
                     group_id: 'memory_' + m.ownerId, content: $fact, source: 'text'})
             CREATE (o:Episodic {uuid: $other, name: $other, group_id: 'memory_' + m.ownerId,
                     content: 'plays the cello', source: 'text'})
             CREATE (i:Entity {uuid: $ines, name: 'Ines', group_id: 'memory_' + m.ownerId})
             CREATE (p:Entity {uuid: $porto, name: 'Porto', group_id: 'memory_' + m.ownerId})
             CREATE (c:Entity {uuid: $cello, name: 'cello', group_id: 'memory_' + m.ownerId})
             CREATE (e)-[:MENTIONS]->(i), (e)-[:MENTIONS]->(p), (e)-[:MENTIONS]->(c),
                    (o)-[:MENTIONS]->(i), (o)-[:MENTIONS]->(c)
             CREATE (i)-[:RELATES_TO {uuid: $onlyHere, fact: $fact, episodes: [$episode]}]->(p)
             CREATE (i)-[:RELATES_TO {uuid: $alsoHere, fact: 'Ines owns a cello',
                     episodes: [$episode]}]->(c)
             CREATE (i)-[:RELATES_TO {uuid: $shared, fact: 'Ines plays the cello',
                     episodes: [$episode, $other]}]->(c)",
        )
        .param("memory", memory.clone())
        .param("episode", episode.clone())
        .param("name", episode_name(EpisodeSource::Memory, &memory))
        .param("fact", fact)
        .param("other", other.clone())
        .param("ines", ines.clone())
        .param("porto", porto.clone())
        .param("cello", cello.clone())
        .param("onlyHere", only_here.clone())
        .param("alsoHere", also_here.clone())
        .param("shared", shared.clone()),
    )
    .await;

    u.delete(&format!("/v1/memories/{memory}")).await.ok(204);

    let left: Vec<Value> = graph_rows(
        aiden_graph_query(
            "MATCH (:Memory {id: $memory})-[:HAS_CONTENT]->(e:Episodic)
             RETURN e.content AS content, e.forgottenAt IS NOT NULL AS forgotten,
                    COUNT { (e)-[:MENTIONS]->() } AS mentions,
                    [u IN $entities WHERE EXISTS { MATCH (:Entity {uuid: u}) }] AS entities,
                    [u IN $facts WHERE EXISTS { MATCH ()-[:RELATES_TO {uuid: u}]->() }] AS facts,
                    COLLECT { MATCH ()-[r:RELATES_TO {uuid: $shared}]->() RETURN r.episodes }
                      AS sharedEpisodes",
        )
        .param("memory", memory.clone())
        .param("entities", vec![ines.clone(), porto.clone(), cello.clone()])
        .param(
            "facts",
            vec![only_here.clone(), also_here.clone(), shared.clone()],
        )
        .param("shared", shared.clone()),
    )
    .await;
    assert_eq!(left.len(), 1, "the Episode stays bound: {left:?}");
    let row = &left[0];
    assert_eq!(row["content"], "", "{row}");
    assert_eq!(row["forgotten"], true);
    assert_eq!(row["mentions"], 0);
    assert_eq!(
        row["entities"],
        json!([ines, cello]),
        "Porto, which only it mentioned, is gone"
    );
    assert_eq!(
        row["facts"],
        json!([shared]),
        "the facts only it supported are gone"
    );
    assert_eq!(
        row["sharedEpisodes"],
        json!([[other]]),
        "the other stops citing it"
    );

    // Forgotten twice: 404, nothing more happens.
    let again = u.delete(&format!("/v1/memories/{memory}")).await;
    again.ok(404);
    // What this test planted and the forgetting left.
    graph_write(
        aiden_graph_query("MATCH (n) WHERE n.uuid IN [$other, $ines, $cello] DETACH DELETE n")
            .param("other", other)
            .param("ines", ines)
            .param("cello", cello),
    )
    .await;
}
