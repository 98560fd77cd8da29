#!/usr/bin/env python3
"""Issue #35's check with the official Neo4j Python driver (PyPI `neo4j`, pinned in
workers/graphiti/requirements.txt): Aiden's conversation graph and graphiti-core's knowledge graph
are one graph. One Cypher query walks from a Conversation through its Turns and Alternatives,
over HAS_CONTENT to graphiti-core's own Episodic node and over its MENTIONS to its Entity nodes —
edges only, no join on a property (the one property matched is the Conversation's id, where the
walk starts).

    AIDEN_NEO4J_URI=bolt://127.0.0.1:7688 AIDEN_NEO4J_PASSWORD=... [AIDEN_NEO4J_USER, _DATABASE] \\
      .stack/graphiti-venv/bin/python tests/knowledge/graph_walk.py CONVERSATION_ID [ENTITY_NAME...]

Exits 0 if at least one path exists and every ENTITY_NAME is reached; tests/knowledge/main.rs
runs it after its extraction scenario (scripted LLM, workers/graphiti/fake_llm.py).
"""

from __future__ import annotations

import os
import sys

from neo4j import GraphDatabase

WALK = """
MATCH (:Conversation {id: $conversationId})-[:HAS_TURN]->(:ConversationTurn)
      -[:HAS_ALTERNATIVE]->(a:Alternative)-[:HAS_CONTENT]->(e:Episodic)-[:MENTIONS]->(n:Entity)
RETURN a.id AS alternative, e.uuid AS episode, e.group_id AS episodeGroup, n.uuid AS entity,
       n.name AS name, n.group_id AS entityGroup
ORDER BY alternative, name
"""


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    conversation, expected = sys.argv[1], sys.argv[2:]
    driver = GraphDatabase.driver(
        os.environ.get('AIDEN_NEO4J_URI', 'bolt://127.0.0.1:7687'),
        auth=(os.environ.get('AIDEN_NEO4J_USER', 'neo4j'), os.environ.get('AIDEN_NEO4J_PASSWORD', '')),
    )
    with driver:
        records, _, _ = driver.execute_query(
            WALK,
            conversationId=conversation,
            database_=os.environ.get('AIDEN_NEO4J_DATABASE', 'neo4j'),
        )
    paths = [r.data() for r in records]
    alternatives = {p['alternative'] for p in paths}
    names = sorted({p['name'] for p in paths})
    print(f'graph_walk: {len(paths)} path(s) Alternative -HAS_CONTENT-> Episodic -MENTIONS-> Entity '
          f'from {len(alternatives)} Alternative(s) of {conversation}: {names}')
    failures = []
    if not paths:
        failures.append('no path at all')
    missing = [n for n in expected if n not in names]
    if missing:
        failures.append(f'entities not reached: {missing}')
    # What was walked is graphiti-core's own data: its group id is the conversation (EPI-1).
    foreign = [p for p in paths if p['episodeGroup'] != conversation or p['entityGroup'] != conversation]
    if foreign:
        failures.append(f'episodes or entities outside group {conversation}: {foreign[:3]}')
    for f in failures:
        print(f'graph_walk: FAIL: {f}', file=sys.stderr)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
