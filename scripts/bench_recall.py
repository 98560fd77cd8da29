#!/usr/bin/env python3
"""The recall benchmark's driver, run by scripts/bench-recall.sh.

Writes N user messages (Episodes once bound) over C conversations of one new user through the
API, waits until the episode pool has bound and embedded them all, then times GET /v1/search
(p50/p99 per kind mix) and the embedder itself (texts per second, one at a time and in batches).
With --ingest-only, no search is timed; with --reuse FILE, only the searches, as the user an
earlier run kept in FILE. With --after-start, only the first searches after a start, of the user
an earlier run wrote to --state. Standard library only. Prints one JSON line last.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PEOPLE = ['my sister', 'my neighbour', 'our landlord', 'my manager', 'a colleague', 'my dentist',
          'the plumber', 'my cousin', 'our teacher', 'my partner', 'the vet', 'my grandmother']
ACTS = ['booked', 'cancelled', 'moved', 'paid for', 'forgot', 'planned', 'asked about',
        'complained about', 'recommended', 'reviewed', 'postponed', 'confirmed']
THINGS = ['the flight to Oslo', 'a table at the Thai place', 'the boiler repair', 'piano lessons',
          'the electricity bill', 'a week in Crete', 'the car service', 'new running shoes',
          'the quarterly report', 'a birthday cake', 'the gym membership', 'tickets for the opera',
          'a sourdough class', 'the roof inspection', 'a laptop upgrade', 'the school trip']
WHEN = ['yesterday', 'last Tuesday', 'this morning', 'for next month', 'in March', 'on Friday',
        'before the holidays', 'after lunch', 'for the weekend', 'two weeks ago']
EXTRA = ['It cost more than expected.', 'I should write it down.', 'Remind me later.',
         'That was a relief.', 'Not sure it was worth it.', 'We argued about it.', '',
         'The receipt is in my inbox.', 'It took three phone calls.', '']


def message(rng: random.Random, i: int) -> str:
    return (f'{rng.choice(PEOPLE).capitalize()} {rng.choice(ACTS)} {rng.choice(THINGS)} '
            f'{rng.choice(WHEN)}. {rng.choice(EXTRA)} (note {i})').strip()


def question(rng: random.Random) -> str:
    return rng.choice([
        f'When did someone sort out {rng.choice(THINGS)}?',
        f'What did {rng.choice(PEOPLE)} do about {rng.choice(THINGS)}?',
        f'Anything about {rng.choice(THINGS).split(" ", 1)[1]} {rng.choice(WHEN)}?',
        'Which repairs around the house are still open?',
        'What travel did we arrange recently?',
    ])


class Api:
    def __init__(self, base: str, token: str):
        self.base, self.token = base.rstrip('/'), token

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header('Authorization', f'Bearer {self.token}')
        if data is not None:
            req.add_header('Content-Type', 'application/json')
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b'{}')


def count_embedded(neo4j_http: str, password: str, owner: str) -> int:
    stmt = ('MATCH (c:Conversation {ownerId: $owner}) MATCH (a:Alternative {conversationId: c.id}) '
            'WHERE a:Embedded RETURN count(a) AS n')
    body = json.dumps({'statements': [{'statement': stmt, 'parameters': {'owner': owner}}]}).encode()
    req = urllib.request.Request(f'{neo4j_http}/db/neo4j/tx/commit', data=body, method='POST')
    req.add_header('Content-Type', 'application/json')
    req.add_header('Authorization', 'Basic ' + base64.b64encode(f'neo4j:{password}'.encode()).decode())
    with urllib.request.urlopen(req, timeout=60) as r:
        out = json.loads(r.read())
    if out.get('errors'):
        raise RuntimeError(out['errors'])
    return out['results'][0]['data'][0]['row'][0]


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


FIRST_QUERIES = 30


def after_start(a: argparse.Namespace, rng: random.Random) -> None:
    """The first searches after a start, the very first included (all kinds, limit 10): the
    first one's time and the p99 of the first FIRST_QUERIES, as `<label>_…` in one JSON line."""
    with open(a.state, encoding='utf-8') as f:
        user = Api(a.server, json.load(f)['token'])
    times = []
    for _ in range(FIRST_QUERIES):
        q = urllib.parse.quote(question(rng))
        t0 = time.perf_counter()
        answer = user.call('GET', f'/v1/search?q={q}&limit=10')
        times.append((time.perf_counter() - t0) * 1000)
        assert 'vector' in answer['signals'], answer
    label = a.after_start
    results = {f'{label}_first_ms': round(times[0], 1),
               f'{label}_first{FIRST_QUERIES}_p99_ms': round(percentile(times, 99), 1),
               f'{label}_first{FIRST_QUERIES}_p50_ms': round(percentile(times, 50), 1)}
    print(f'bench: {label}: the first search {times[0]:.1f} ms; the first {FIRST_QUERIES}: '
          f'p50 {percentile(times, 50):.1f}, p99 {percentile(times, 99):.1f} ms', file=sys.stderr)
    print(f'bench: {label}: each of the first {FIRST_QUERIES} in turn, ms: '
          + ' '.join(f'{t:.0f}' for t in times), file=sys.stderr)
    print(json.dumps(results))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--server', required=True)
    ap.add_argument('--token', required=True)
    ap.add_argument('--graphiti', required=True)
    ap.add_argument('--neo4j-http', required=True)
    ap.add_argument('--neo4j-password', required=True)
    ap.add_argument('--episodes', type=int, default=10_000)
    ap.add_argument('--conversations', type=int, default=200)
    ap.add_argument('--queries', type=int, default=300)
    ap.add_argument('--writers', type=int, default=4)
    ap.add_argument('--state', help='a file: the user and their token are written there (ingest) '
                    'or read from there (--after-start)')
    ap.add_argument('--after-start', metavar='LABEL',
                    help='only time the first searches of the --state user after a start')
    ap.add_argument('--ingest-only', action='store_true',
                    help='write the corpus and wait until it is embedded; time no search')
    ap.add_argument('--reuse', metavar='FILE',
                    help='a state file an earlier run kept: search as its user, whose messages are '
                    'already written and embedded, instead of writing a new corpus')
    a = ap.parse_args()
    rng = random.Random(37)
    if a.after_start:
        after_start(a, rng)
        return
    if a.reuse:
        with open(a.reuse, encoding='utf-8') as f:
            kept = json.load(f)
        if a.state:
            with open(a.state, 'w', encoding='utf-8') as f:
                json.dump(kept, f)
        results = {'episodes': count_embedded(a.neo4j_http, a.neo4j_password, kept['user']),
                   'searched_as': kept['user']}
        if results['episodes'] == 0:
            sys.exit(f'bench: {kept["user"]} has nothing embedded (a graph reset?): remove {a.reuse}')
        print(f'bench: reusing {kept["user"]}: {results["episodes"]} embedded', file=sys.stderr)
        timed_searches(a, Api(a.server, kept['token']), rng, results)
        print(json.dumps(results))
        return
    admin = Api(a.server, a.token)
    uid = f'bench-recall-{int(time.time())}'
    token = admin.call('POST', '/v1/users', {'id': uid, 'name': uid, 'role': 'user'})['token']
    user = Api(a.server, token)
    if a.state:
        with open(a.state, 'w', encoding='utf-8') as f:
            json.dump({'user': uid, 'token': token}, f)

    # The embedder alone first, on an idle machine (later the ingestion would share its cores).
    results: dict = {}
    embed = Api(a.graphiti, '')
    sample = [message(rng, -1) for _ in range(64)]
    for size in (1, 32):
        t0 = time.perf_counter()
        done = 0
        while done < 128:
            embed.call('POST', '/embed', {'texts': sample[:size]})
            done += size
        rate = done / (time.perf_counter() - t0)
        results[f'embed_batch{size}_texts_per_s'] = round(rate, 1)
        print(f'bench: embedder, batches of {size}: {rate:.1f} texts/s', file=sys.stderr)
    per = a.episodes // a.conversations
    texts = [[message(rng, c * per + i) for i in range(per)] for c in range(a.conversations)]

    def write(c: int) -> None:
        conv = user.call('POST', '/v1/conversations', {'title': f'bench {c}'})['id']
        parent = None
        for text in texts[c]:
            body = {'speaker': 'user', 'content': text}
            if parent:
                body['parentTurnId'], body['parentAlternativeId'] = parent
            t = user.call('POST', f'/v1/conversations/{conv}/turns', body)
            parent = (t['id'], t['alternatives'][0]['id'])

    started = time.monotonic()
    with ThreadPoolExecutor(a.writers) as pool:
        list(pool.map(write, range(a.conversations)))
    written = time.monotonic() - started
    total = per * a.conversations
    print(f'bench: {total} messages written in {written:.1f} s; waiting for them to be embedded',
          file=sys.stderr)
    last, n = time.monotonic(), 0
    while n < total:
        time.sleep(2)
        n = count_embedded(a.neo4j_http, a.neo4j_password, uid)
        if time.monotonic() - last > 15:
            print(f'bench: {n}/{total} embedded', file=sys.stderr)
            last = time.monotonic()
    ingested = time.monotonic() - started

    results.update({'episodes': total, 'conversations': a.conversations,
                    'write_s': round(written, 1), 'embedded_after_s': round(ingested, 1)})
    time.sleep(5)  # the last bindings' commits and the vector index settle
    if not a.ingest_only:
        timed_searches(a, user, rng, results)
    print(json.dumps(results))


def timed_searches(a: argparse.Namespace, user: Api, rng: random.Random, results: dict) -> None:
    """p50/p99 of `a.queries` searches per kind mix, after 30 warm-up ones, into `results`."""
    for label, kinds in [('episode', 'episode'), ('all', 'episode,entity,fact,summary,introspection')]:
        for q in [question(rng) for _ in range(30)]:  # warm-up (query plans, caches)
            user.call('GET', f'/v1/search?q={urllib.parse.quote(q)}&kinds={kinds}')
        times = []
        for _ in range(a.queries):
            q = urllib.parse.quote(question(rng))
            t0 = time.perf_counter()
            answer = user.call('GET', f'/v1/search?q={q}&kinds={kinds}&limit=10')
            times.append((time.perf_counter() - t0) * 1000)
            assert 'vector' in answer['signals'], answer
        results[f'search_{label}_p50_ms'] = round(percentile(times, 50), 2)
        results[f'search_{label}_p99_ms'] = round(percentile(times, 99), 2)
        print(f'bench: search ({label}) p50 {results[f"search_{label}_p50_ms"]} ms, '
              f'p99 {results[f"search_{label}_p99_ms"]} ms over {a.queries} queries', file=sys.stderr)


if __name__ == '__main__':
    main()
