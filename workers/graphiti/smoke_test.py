#!/usr/bin/env python3
"""End-to-end smoke test of aiden_graphiti_service against the scripted fake LLM and Neo4j.

Starts nothing itself (`scripts/graphiti.sh smoke` starts everything and runs it). Run with the
venv's python (it reads the graph directly with the official `neo4j` driver, on the same
database as the services):

    AIDEN_GRAPHITI_URL=http://127.0.0.1:18091 \\        # service WITH AIDEN_GRAPHITI_LLM_BASE_URL
    AIDEN_GRAPHITI_DISABLED_URL=http://127.0.0.1:18092  # service WITHOUT it (or pass --skip-disabled)
    AIDEN_FAKE_LLM_URL=http://127.0.0.1:18093 \\         # fake_llm.py, the enabled service's LLM
    AIDEN_NEO4J_URI=bolt://127.0.0.1:7688 AIDEN_NEO4J_PASSWORD=... \\  # (+ _USER, _DATABASE)
    .stack/graphiti-venv/bin/python workers/graphiti/smoke_test.py [--keep]

Every run uses fresh group ids (smoke-<random>), so it never meets another run's or another
suite's data in the shared database, and deletes its groups' nodes at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid as uuidlib
from datetime import datetime, timedelta, timezone

FAILURES: list[str] = []


def http(method: str, url: str, body=None, raw: bytes | None = None, timeout: float = 120):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header('Content-Type', 'application/json')
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b'null')
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text or b'null')
        except ValueError:
            return e.code, {'raw': text.decode('utf-8', 'replace')}


def check(condition: bool, what: str) -> None:
    print(('ok    ' if condition else 'FAIL  ') + what, flush=True)
    if not condition:
        FAILURES.append(what)


def require(condition: bool, what: str) -> None:
    check(condition, what)
    if not condition:
        finish()


def finish() -> None:
    if FAILURES:
        print(f'\n{len(FAILURES)} check(s) failed:', *FAILURES, sep='\n  ', file=sys.stderr)
        sys.exit(1)
    print('\nsmoke test passed')
    sys.exit(0)


def rfc3339(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace('+00:00', 'Z')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--keep', action='store_true', help="keep the smoke groups' nodes in Neo4j")
    parser.add_argument('--skip-disabled', action='store_true',
                        help='skip the extraction-disabled check (no AIDEN_GRAPHITI_DISABLED_URL)')
    args = parser.parse_args()

    svc = os.environ.get('AIDEN_GRAPHITI_URL', 'http://127.0.0.1:8091').rstrip('/')
    off = os.environ.get('AIDEN_GRAPHITI_DISABLED_URL', '').rstrip('/')
    llm = os.environ.get('AIDEN_FAKE_LLM_URL', '').rstrip('/')
    neo4j_uri = os.environ.get('AIDEN_NEO4J_URI', 'bolt://127.0.0.1:7687')
    database = os.environ.get('AIDEN_NEO4J_DATABASE', 'neo4j')
    if not llm:
        sys.exit('set AIDEN_FAKE_LLM_URL to the fake LLM the service at AIDEN_GRAPHITI_URL uses')
    if not off and not args.skip_disabled:
        sys.exit('set AIDEN_GRAPHITI_DISABLED_URL to a service started without '
                 'AIDEN_GRAPHITI_LLM_BASE_URL, or pass --skip-disabled')

    from neo4j import GraphDatabase

    db = GraphDatabase.driver(
        neo4j_uri,
        auth=(os.environ.get('AIDEN_NEO4J_USER', 'neo4j'), os.environ.get('AIDEN_NEO4J_PASSWORD', '')),
    )

    def query(text: str, **params) -> list[dict]:
        return [r.data() for r in db.execute_query(text, params, database_=database).records]

    run = uuidlib.uuid4().hex[:8]
    group = f'smoke-{run}'
    other_group = f'smoke-{run}-other'
    off_group = f'smoke-{run}-off'
    print(f'service {svc}, fake LLM {llm}, Neo4j {neo4j_uri} db={database}, group {group}\n')

    def llm_requests() -> list[dict]:
        status, body = http('GET', f'{llm}/debug/requests')
        if status != 200:
            require(False, f'fake LLM answers /debug/requests ({status})')
        return body['items']

    def put(base: str, uid: str, g: str, content: str, at: datetime, **extra):
        body = {
            'name': f'episode {uid[:8]}',
            'group_id': g,
            'source': 'message',
            'source_description': 'aiden smoke test',
            'content': content,
            'valid_at': rfc3339(at),
            **extra,
        }
        return http('PUT', f'{base}/episodes/{uid}', body)

    def extract(base: str, uid: str, g: str, previous: list[str]):
        started = time.monotonic()
        status, body = http('POST', f'{base}/episodes/{uid}/extract',
                            {'group_id': g, 'previous_episode_uuids': previous})
        return status, body, time.monotonic() - started

    try:
        status, health = http('GET', f'{svc}/healthz')
        require(status == 200 and health.get('ok') is True, f'healthz 200 ok: {health}')
        require(health.get('extraction') == 'enabled', 'extraction is enabled on AIDEN_GRAPHITI_URL')
        check(health.get('database') == database, f'the service is on database {database} ({health})')
        constraints = {r['name'] for r in query('SHOW CONSTRAINTS YIELD name RETURN name')}
        check({'episodic_uuid', 'entity_uuid'} <= constraints,
              f'uuid uniqueness constraints on Episodic and Entity exist ({sorted(constraints)})')
        indexes = {r['name'] for r in query('SHOW INDEXES YIELD name RETURN name')}
        check({'node_name_and_summary', 'episode_content', 'edge_name_and_fact'} <= indexes,
              "graphiti's full-text indices exist")

        texts = {
            'A': 'user: I met Ada Lovelace in London',
            'B1': 'agent: Ada wrote about the Analytical Engine',
            'B2': 'agent: Charles Babbage built the Difference Engine',
            'C': 'user: Did Babbage ever finish the Difference Engine?',
        }
        ids = {k: str(uuidlib.uuid4()) for k in texts}
        t0 = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)
        for i, key in enumerate(('A', 'B1', 'B2', 'C')):
            status, body = put(svc, ids[key], group, texts[key], t0 + timedelta(minutes=i))
            check(status == 200 and body.get('created') is True and body.get('uuid') == ids[key],
                  f'PUT {key} creates the episode under its uuid ({status} {body})')

        timings: dict[str, float] = {}
        results: dict[str, dict] = {}
        plan = [('A', []), ('B1', ['A']), ('B2', ['A'])]
        for key, previous in plan:
            status, body, took = extract(svc, ids[key], group, [ids[p] for p in previous])
            timings[key] = took
            results[key] = body
            require(status == 200 and body.get('status') == 'extracted'
                    and body.get('alreadyExtracted') is False,
                    f'extract {key} runs ({status}, {took:.2f}s)')

        # A property of ours on an Entity graphiti made: C's extraction resolves "Difference
        # Engine" to B2's node and graphiti saves it again (`SET n = $entity_data`).
        engine = [e['uuid'] for e in results['B2']['entities'] if e['name'] == 'Difference Engine']
        require(len(engine) == 1, f"B2 extracted 'Difference Engine' ({results['B2']['entities']})")
        query('MATCH (n:Entity {uuid: $u}) SET n.aiden_smoke_probe = $run', u=engine[0], run=run)
        before_c = len(llm_requests())
        status, body, took = extract(svc, ids['C'], group, [ids['A'], ids['B2']])
        timings['C'] = took
        results['C'] = body
        require(status == 200 and body.get('status') == 'extracted'
                and body.get('alreadyExtracted') is False, f'extract C runs ({status}, {took:.2f}s)')

        check(engine[0] in [e['uuid'] for e in results['C']['entities']],
              "C resolved 'Difference Engine' to B2's Entity")
        probe = query('MATCH (n:Entity {uuid: $u}) RETURN n.aiden_smoke_probe AS p, n.group_id AS g',
                      u=engine[0])
        check(probe == [{'p': run, 'g': group}],
              f'a property of ours on an Entity survives graphiti saving it again ({probe})')
        for key in ('A', 'B1', 'B2', 'C'):
            names = [e['name'] for e in results[key]['entities']]
            check(bool(names) and all(n.lower() in texts[key].lower() for n in names),
                  f'{key}: entities {names} are drawn from its own content')
            check(all(set(e) >= {'uuid', 'name', 'summary', 'labels'} for e in results[key]['entities']),
                  f'{key}: entities carry uuid, name, summary, labels')
            check(all(set(e) >= {'uuid', 'source_node_uuid', 'target_node_uuid', 'name', 'fact'}
                      for e in results[key]['edges']),
                  f'{key}: edges carry uuid, source/target node uuids, name, fact')
        check(len(results['A']['edges']) == 1 and results['A']['edges'][0]['name'] == 'RELATES_TO',
              f"A: one RELATES_TO edge ({[e['fact'] for e in results['A']['edges']]})")

        c_requests = llm_requests()[before_c:]
        extraction = [r for r in c_requests if r.get('schema') == 'ExtractedEntities']
        require(len(extraction) == 1, f'C: one entity-extraction prompt ({len(extraction)})')
        prompt = '\n'.join(str(m.get('content')) for m in extraction[0]['messages'])
        check(texts['A'] in prompt, "C's extraction prompt holds A's text")
        check(texts['B2'] in prompt, "C's extraction prompt holds B2's text")
        check(texts['B1'] not in prompt, "C's extraction prompt does not hold B1's text")
        check(texts['C'] in prompt, "C's extraction prompt holds C's own text")
        leaked = [r.get('schema') or r['path'] for r in c_requests if texts['B1'] in json.dumps(r)]
        check(not leaked, f'no LLM request made for C mentions B1 ({leaked})')
        unknown = [r.get('schema') for r in llm_requests() if r.get('unknown')]
        check(not unknown, f'the fake LLM knew every prompt graphiti sent ({unknown})')
        schemas = sorted({r.get('schema') or r['path'] for r in c_requests})
        print(f'      requests for C: {len(c_requests)} ({", ".join(map(str, schemas))})')

        status, log = http('GET', f'{svc}/debug/extractions')
        c_runs = [i for i in log.get('items', []) if i.get('uuid') == ids['C']]
        check(status == 200 and len(c_runs) == 1 and c_runs[0]['ran'] is True
              and c_runs[0]['previous_episode_uuids'] == [ids['A'], ids['B2']]
              and c_runs[0]['group_id'] == group,
              f'/debug/extractions records C with previous [A, B2] ({c_runs})')

        before_again = len(llm_requests())
        status, again, took = extract(svc, ids['C'], group, [ids['A'], ids['B2']])
        timings['C again'] = took
        check(status == 200 and again.get('alreadyExtracted') is True and again.get('status') == 'extracted',
              f'second extract of C: alreadyExtracted ({status}, {took:.3f}s)')
        check(sorted(e['uuid'] for e in again.get('entities', []))
              == sorted(e['uuid'] for e in results['C']['entities']),
              'second extract of C returns the same entities (read from MENTIONS)')
        check(sorted(e['uuid'] for e in again.get('edges', []))
              == sorted(e['uuid'] for e in results['C']['edges']),
              'second extract of C returns the same edges')
        check(len(llm_requests()) == before_again, 'second extract of C made no LLM request')

        status, body = put(svc, ids['C'], group, texts['C'], t0 + timedelta(minutes=3))
        check(status == 200 and body.get('created') is False, f'second PUT of C: created=false ({body})')
        count = query('MATCH (e:Episodic {uuid: $u}) RETURN count(e) AS n', u=ids['C'])[0]['n']
        check(count == 1, f"Neo4j holds exactly one Episodic node with C's uuid ({count})")
        marker = query('MATCH (e:Episodic {uuid: $u}) RETURN e.aiden_extracted_at AS at, e.content AS content',
                       u=ids['C'])[0]
        check(bool(marker['at']) and marker['content'] == texts['C'],
              f'the marker aiden_extracted_at survives graphiti and content is intact ({marker["at"]})')
        total = query('MATCH (e:Episodic {group_id: $g}) RETURN count(e) AS n', g=group)[0]['n']
        check(total == 4, f'the group holds the 4 episodes A, B1, B2, C ({total})')
        mentioned = query('MATCH (:Episodic {uuid: $u})-[:MENTIONS]->(n:Entity {group_id: $g}) '
                          'RETURN collect(n.uuid) AS uuids', u=ids['C'], g=group)[0]['uuids']
        check(sorted(mentioned) == sorted(e['uuid'] for e in results['C']['entities']),
              "C's entities are graphiti's own Entity nodes, MENTIONed by C's Episodic node")

        # Errors.
        status, body = http('PUT', f'{svc}/episodes/{uuidlib.uuid4()}', {'group_id': group, 'name': 'x'})
        check(status == 400 and 'content' in body.get('missing', []), f'PUT with missing fields: 400 ({body})')
        status, body = put(svc, str(uuidlib.uuid4()), group, 'x', t0, valid_at='yesterday')
        check(status == 400, f'PUT with a bad valid_at: 400 ({body})')
        status, body, _ = extract(svc, str(uuidlib.uuid4()), group, [])
        check(status == 404, f'extract of an unsaved episode: 404 ({body})')
        d = str(uuidlib.uuid4())
        d_text = 'user: Thanks for the tip about Grace Hopper'
        put(svc, d, group, d_text, t0 + timedelta(minutes=4))
        ghost = str(uuidlib.uuid4())
        before = len(llm_requests())
        status, body, _ = extract(svc, d, group, [ids['A'], ghost])
        check(status == 422 and body.get('unknown') == [ghost], f'unknown previous episode: 422 ({body})')
        status, body, _ = extract(svc, d, group, [ids['A'], ids['B1'].replace('-', '')])
        check(status == 422, f'previous episode from nowhere: 422 ({status})')
        check(len(llm_requests()) == before, 'a 422 makes no LLM request')
        status, body, took = extract(svc, d, group, [ids['A']])
        timings['D'] = took
        check(status == 200 and [e['name'] for e in body.get('entities', [])] == ['Grace Hopper']
              and body.get('edges') == [], f'D (one entity, no edge) extracts ({status})')
        seen = {r.get('schema') for r in llm_requests() if r.get('schema')}
        expected = {'ExtractedEntities', 'NodeResolutions', 'ExtractedEdges', 'EdgeDuplicate',
                    'EdgeTimestamps', 'SummarizedEntities'}
        check(expected <= seen, f'the run exercised every scripted add_episode prompt ({sorted(seen)})')
        unknown = [r.get('schema') for r in llm_requests() if r.get('unknown')]
        check(not unknown, f'still no unknown prompt ({unknown})')
        # Two concurrent extracts of one episode: the per-group lock lets exactly one run.
        from concurrent.futures import ThreadPoolExecutor

        twin = str(uuidlib.uuid4())
        put(svc, twin, group, 'user: Linus Torvalds wrote Linux', t0 + timedelta(minutes=5))
        with ThreadPoolExecutor(2) as pool:
            both = list(pool.map(lambda _: extract(svc, twin, group, [d]), range(2)))
        flags = sorted(b.get('alreadyExtracted') for _, b, _ in both)
        check([s for s, _, _ in both] == [200, 200] and flags == [False, True],
              f'two concurrent extracts of one episode: one runs, one finds it done ({flags})')
        status, body = put(svc, ids['C'], other_group, texts['C'], t0)
        check(status == 409, f'PUT of C under another group: 409 ({body})')
        status, body, _ = extract(svc, ids['C'], other_group, [])
        check(status == 409, f'extract of C under another group: 409 ({body})')
        big = 'x' * (1024 * 1024 + 1)
        status, body = http('PUT', f'{svc}/episodes/{uuidlib.uuid4()}', raw=big.encode())
        check(status == 413, f'body over 1 MiB: 413 ({status})')
        status, body = put(svc, str(uuidlib.uuid4()), group, 'y' * (900 * 1024), t0)
        check(status == 200 and body.get('created') is True, f'900 KiB content is accepted ({status})')

        if off:
            status, health = http('GET', f'{off}/healthz')
            check(status == 200 and health.get('extraction') == 'disabled',
                  f'service without AIDEN_GRAPHITI_LLM_BASE_URL reports extraction disabled ({health})')
            e = str(uuidlib.uuid4())
            status, body = put(off, e, off_group, 'user: Alan Turing in Manchester', t0)
            check(status == 200 and body.get('created') is True, f'disabled: PUT still saves ({body})')
            before = len(llm_requests())
            status, body, _ = extract(off, e, off_group, [])
            check(status == 200 and body == {'status': 'skipped', 'entities': [], 'edges': []},
                  f'disabled: extract answers skipped ({body})')
            check(len(llm_requests()) == before, 'disabled: no LLM request')
            status, body = http('GET', f'{off}/debug/extractions')
            check(any(i['uuid'] == e and i['ran'] is False for i in body.get('items', [])),
                  'disabled: /debug/extractions records ran=false')

        print('\ntimings: ' + ', '.join(f'extract {k} {v * 1000:.0f} ms' for k, v in timings.items()))
    finally:
        if not args.keep:
            try:
                query('MATCH (n) WHERE (n:Episodic OR n:Entity) AND n.group_id IN $gs DETACH DELETE n',
                      gs=[group, other_group, off_group])
            except Exception as e:  # noqa: BLE001
                print(f'could not delete the smoke groups: {e}', file=sys.stderr)
        db.close()
    finish()


if __name__ == '__main__':
    main()
