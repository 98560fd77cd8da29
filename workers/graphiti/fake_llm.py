#!/usr/bin/env python3
"""A scripted, deterministic OpenAI-compatible server for tests. Standard library only.

    python3 fake_llm.py --port P [--host 127.0.0.1] [--log FILE] [--dim 384]

Routes
  POST /v1/chat/completions, /chat/completions   one scripted JSON answer per graphiti prompt
  POST /v1/embeddings, /embeddings               deterministic bag-of-words unit vectors (--dim)
  GET  /v1/models, /models                       a one-model list (some clients probe it)
  GET  /debug/requests                           {"items": [...]}: every request served so far
  POST /debug/reset                              forget them (the --log file is kept: append-only)
  GET  /healthz                                  {"ok": true}

How a prompt is recognised. graphiti-core 0.31.1's OpenAIGenericClient sends
`response_format = {"type": "json_schema", "json_schema": {"name": <pydantic model name>,
"schema": ...}}`; in its `json_object` mode (and with the base LLMClient) the schema is appended to
the last message after "Respond with a JSON object in the following format:". Either way the
model name (the schema `title`) says which answer is wanted:

  ExtractedEntities     entity extraction (extract_nodes.extract_message/_text/_json): the
                        capitalised names of the CURRENT episode only (see `names_in`), read from
                        <CURRENT MESSAGE>, <TEXT> or <JSON>; never from <PREVIOUS MESSAGES>.
  NodeResolutions       entity dedup (dedupe_nodes.nodes): every entity of <ENTITIES> is new
                        (duplicate_candidate_id = -1).
  ExtractedEdges        edge extraction (extract_edges.edge): one RELATES_TO fact between the
                        first two names of <ENTITIES>, none if fewer than two.
  EdgeDuplicate         edge dedup/contradiction (dedupe_edges.resolve_edge): no duplicate, no
                        contradiction.
  EdgeTimestamps        extract_edges.extract_timestamps: both null.
  BatchEdgeTimestamps   extract_edges.extract_timestamps_batch: nulls, one per fact.
  SummarizedEntities    extract_nodes.extract_summaries_batch / ..._from_episodes: one short
                        summary per entity of <ENTITIES>.
  EntitySummary, Summary, SagaSummary   {"summary": "..."}; SummaryDescription {"description"}.
  CombinedExtraction    extract_nodes_and_edges (bulk path): entities + the RELATES_TO fact.
Anything else answers `{}` and logs a warning (the caller's validation then fails loudly, which is
the point: a new graphiti prompt must be scripted here, not guessed).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import struct
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCHEMA_MARKER = 'Respond with a JSON object in the following format:'

# Capitalised words that start a sentence or a question and are not names.
STOP_WORDS = {
    'The', 'This', 'That', 'These', 'Those', 'There', 'Then', 'Than', 'They', 'Their', 'Them',
    'What', 'When', 'Where', 'Which', 'Who', 'Whom', 'Whose', 'Why', 'How', 'Did', 'Does', 'Do',
    'Done', 'And', 'But', 'For', 'Not', 'Yes', 'Yet', 'You', 'Your', 'Yours', 'She', 'Her', 'His',
    'Him', 'Its', 'Our', 'Ours', 'Was', 'Were', 'Are', 'Is', 'Has', 'Have', 'Had', 'Can', 'Could',
    'Will', 'Would', 'Should', 'Shall', 'May', 'Might', 'Must', 'Let', 'Please', 'Thanks', 'Thank',
    'Hello', 'Hi', 'Hey', 'Okay', 'Sure', 'Also', 'Here', 'With', 'From', 'About', 'After',
    'Before', 'Some', 'Any', 'All', 'One', 'Just', 'Now', 'Well', 'Maybe', 'Because', 'While',
    'Into', 'Onto', 'Upon', 'Over', 'Under', 'Again', 'Still', 'Very', 'Much', 'Many', 'Most',
    'More', 'Other', 'Another', 'Each', 'Every', 'Both', 'Either', 'Neither', 'None', 'Nothing',
    'Something', 'Anything', 'Everything', 'Someone', 'Anyone', 'Everyone', 'Tell', 'Show',
    'Give', 'Make', 'Take', 'See', 'Look', 'Know', 'Think', 'Said', 'Says', 'Ask', 'Asked',
}

WORD = r"[A-Z][A-Za-z'’\-]{2,}"
NAME_RUN = re.compile(rf'(?<![A-Za-z0-9_])({WORD}(?:[ \t]+{WORD})*)(?![A-Za-z0-9_])')


def names_in(text: str) -> list[str]:
    """The entity names of a text: maximal runs of capitalised words of at least 3 letters
    ("Ada Lovelace", "Analytical Engine"), with leading and trailing STOP_WORDS removed
    ("Did Babbage" -> "Babbage"), first occurrence order, case-insensitively unique."""
    out: list[str] = []
    seen: set[str] = set()
    for match in NAME_RUN.finditer(text):
        words = match.group(1).split()
        while words and words[0] in STOP_WORDS:
            words.pop(0)
        while words and words[-1] in STOP_WORDS:
            words.pop()
        if not words:
            continue
        name = ' '.join(words)
        if name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


def section(text: str, tag: str, *, after: str | None = None) -> str | None:
    """The text between the line `<tag>` and the LAST line `</tag>` (the content itself may hold
    anything). With `after`, the search starts after that marker (e.g. past the previous
    messages, whose JSON may quote the tag)."""
    start_at = 0
    if after is not None:
        pos = text.find(after)
        if pos >= 0:
            start_at = pos + len(after)
    open_tag, close_tag = f'<{tag}>\n', f'\n</{tag}>'
    start = text.find(open_tag, start_at)
    if start < 0:
        return None
    start += len(open_tag)
    end = text.rfind(close_tag)
    if end < start:
        return None
    return text[start:end]


def json_list_section(text: str, tag: str) -> list | None:
    """The last `<tag>\\n[...]\\n</tag>` block whose body parses as a JSON list."""
    pattern = re.compile(rf'(?:^|\n)<{re.escape(tag)}>\n(.*?)\n</{re.escape(tag)}>', re.S)
    found = None
    for match in pattern.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(value, list):
            found = value
    return found


def current_episode(user_text: str) -> tuple[str, str]:
    """(which section, its text): the current episode of an entity-extraction prompt."""
    for tag, after in (
        ('CURRENT MESSAGE', '</PREVIOUS MESSAGES>'),
        ('CURRENT_MESSAGE', '</PREVIOUS_MESSAGES>'),
        ('TEXT', '</ENTITY TYPES>'),
        ('JSON', '</SOURCE DESCRIPTION>'),
    ):
        body = section(user_text, tag, after=after)
        if body is not None:
            return tag, body
    return 'none', ''


def schema_of(body: dict, messages: list[dict]) -> tuple[str | None, dict | None]:
    fmt = body.get('response_format') or {}
    if isinstance(fmt, dict) and fmt.get('type') == 'json_schema':
        js = fmt.get('json_schema') or {}
        schema = js.get('schema') if isinstance(js.get('schema'), dict) else None
        name = js.get('name') or (schema or {}).get('title')
        return name, schema
    if messages:
        last = str(messages[-1].get('content') or '')
        pos = last.rfind(SCHEMA_MARKER)
        if pos >= 0:
            try:
                schema = json.loads(last[pos + len(SCHEMA_MARKER):].strip())
                if isinstance(schema, dict):
                    return schema.get('title'), schema
            except ValueError:
                pass
    return None, None


def user_text_of(messages: list[dict]) -> str:
    parts = [str(m.get('content') or '') for m in messages if m.get('role') == 'user']
    return '\n'.join(parts)


def relates_to(names: list[str]) -> list[dict]:
    if len(names) < 2:
        return []
    return [
        {
            'source_entity_name': names[0],
            'target_entity_name': names[1],
            'relation_type': 'RELATES_TO',
            'fact': f'{names[0]} relates to {names[1]}',
            'valid_at': None,
            'invalid_at': None,
            'episode_indices': [0],
        }
    ]


def entity_names(text: str) -> list[str]:
    entities = json_list_section(text, 'ENTITIES') or []
    return [str(e.get('name')) for e in entities if isinstance(e, dict) and e.get('name')]


def answer(name: str | None, messages: list[dict]) -> tuple[dict, str]:
    """(the JSON answer, a note for the log)."""
    text = user_text_of(messages)
    if name == 'ExtractedEntities':
        where, content = current_episode(text)
        names = names_in(content)
        return (
            {
                'extracted_entities': [
                    {'name': n, 'entity_type_id': 0, 'episode_indices': [0]} for n in names
                ]
            },
            f'entities from <{where}>',
        )
    if name == 'NodeResolutions':
        entities = json_list_section(text, 'ENTITIES') or []
        return (
            {
                'entity_resolutions': [
                    {'id': e.get('id', i), 'name': e.get('name', ''), 'duplicate_candidate_id': -1}
                    for i, e in enumerate(entities)
                    if isinstance(e, dict)
                ]
            },
            'no duplicates',
        )
    if name == 'ExtractedEdges':
        return {'edges': relates_to(entity_names(text))}, 'RELATES_TO first two entities'
    if name == 'EdgeDuplicate':
        return {'duplicate_facts': [], 'contradicted_facts': []}, 'no duplicate facts'
    if name == 'EdgeTimestamps':
        return {'valid_at': None, 'invalid_at': None}, 'no dates'
    if name == 'BatchEdgeTimestamps':
        facts = json_list_section(text, 'FACTS') or []
        return (
            {'timestamps': [{'valid_at': None, 'invalid_at': None} for _ in facts]},
            'no dates',
        )
    if name == 'SummarizedEntities':
        return (
            {
                'summaries': [
                    {'name': n, 'summary': f'{n} appears in the conversation.'}
                    for n in entity_names(text)
                ]
            },
            'one summary per entity',
        )
    if name in ('EntitySummary', 'Summary', 'SagaSummary'):
        return {'summary': 'A short scripted summary.'}, 'summary'
    if name == 'SummaryDescription':
        return {'description': 'A short scripted description.'}, 'description'
    if name == 'CombinedExtraction':
        _, content = current_episode(text)
        names = names_in(content)
        edges = [
            {k: v for k, v in e.items() if k not in ('valid_at', 'invalid_at')}
            for e in relates_to(names)
        ]
        return (
            {
                'extracted_entities': [
                    {'name': n, 'entity_type_id': 0, 'episode_indices': [0]} for n in names
                ],
                'edges': edges,
            },
            'combined',
        )
    return {}, 'UNKNOWN prompt'


def _token_vector(token: str, dim: int) -> list[float]:
    """sha256 counter-mode bytes of the token mapped to [-1, 1]: nearly orthogonal per token."""
    values: list[float] = []
    counter = 0
    seed = token.encode('utf-8')
    while len(values) < dim:
        digest = hashlib.sha256(seed + counter.to_bytes(4, 'big')).digest()
        counter += 1
        for i in range(0, len(digest), 2):
            values.append(int.from_bytes(digest[i : i + 2], 'big') / 32767.5 - 1.0)
    return values[:dim]


def embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector: the normalised sum of one hash vector per lower-cased word
    (bag of words), so texts sharing words are similar ("Babbage" vs "Charles Babbage": ~0.7),
    which drives graphiti's dedup candidates and hence its dedup prompts. A text without words
    hashes as a whole."""
    tokens = re.findall(r'\w+', text.lower()) or [text]
    total = [0.0] * dim
    for token in tokens:
        for i, v in enumerate(_token_vector(token, dim)):
            total[i] += v
    norm = math.sqrt(sum(v * v for v in total)) or 1.0
    return [v / norm for v in total]


def approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class State:
    def __init__(self, log_path: str | None, dim: int):
        self.lock = threading.Lock()
        self.items: list[dict] = []
        self.log_path = log_path
        self.dim = dim

    def record(self, item: dict) -> None:
        with self.lock:
            item['seq'] = len(self.items) + 1
            self.items.append(item)
            if self.log_path:
                with open(self.log_path, 'a', encoding='utf-8') as f:
                    f.write(json.dumps(item, ensure_ascii=False) + '\n')


def make_handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'
        server_version = 'aiden-fake-llm/1'

        def log_message(self, fmt, *args):  # quiet: one line per LLM call is printed below
            pass

        def _send(self, status: int, obj) -> None:
            data = json.dumps(obj, ensure_ascii=False).encode('utf-8')
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self):
            length = int(self.headers.get('Content-Length') or 0)
            raw = self.rfile.read(length) if length else b''
            return json.loads(raw or b'{}')

        def do_GET(self):
            path = self.path.split('?', 1)[0]
            if path == '/debug/requests':
                with state.lock:
                    items = list(state.items)
                self._send(200, {'items': items})
            elif path == '/healthz':
                self._send(200, {'ok': True})
            elif path in ('/v1/models', '/models'):
                self._send(200, {'object': 'list', 'data': [
                    {'id': 'fake', 'object': 'model', 'created': 0, 'owned_by': 'aiden'}]})
            else:
                self._send(404, {'error': {'message': f'no route {path}', 'type': 'not_found'}})

        def do_POST(self):
            path = self.path.split('?', 1)[0]
            try:
                body = self._body()
            except ValueError as e:
                self._send(400, {'error': {'message': f'bad JSON: {e}', 'type': 'invalid_request_error'}})
                return
            if path == '/debug/reset':
                with state.lock:
                    state.items.clear()
                self._send(200, {'ok': True})
            elif path in ('/v1/chat/completions', '/chat/completions'):
                self._chat(path, body)
            elif path in ('/v1/embeddings', '/embeddings'):
                self._embeddings(path, body)
            else:
                self._send(404, {'error': {'message': f'no route {path}', 'type': 'not_found'}})

        def _chat(self, path: str, body: dict) -> None:
            messages = body.get('messages') or []
            name, _schema = schema_of(body, messages)
            content, note = answer(name, messages)
            if note == 'UNKNOWN prompt':
                print(f'fake-llm: WARNING unknown prompt (schema {name!r}); answering {{}}',
                      file=sys.stderr, flush=True)
            text = json.dumps(content, ensure_ascii=False)
            prompt_tokens = approx_tokens(''.join(str(m.get('content') or '') for m in messages))
            response = {
                'id': 'chatcmpl-' + uuid.uuid4().hex[:24],
                'object': 'chat.completion',
                'created': int(time.time()),
                'model': body.get('model') or 'fake',
                'choices': [
                    {
                        'index': 0,
                        'message': {'role': 'assistant', 'content': text},
                        'logprobs': None,
                        'finish_reason': 'stop',
                    }
                ],
                'usage': {
                    'prompt_tokens': prompt_tokens,
                    'completion_tokens': approx_tokens(text),
                    'total_tokens': prompt_tokens + approx_tokens(text),
                },
            }
            state.record({
                'at': time.time(),
                'path': path,
                'model': body.get('model'),
                'schema': name,
                'note': note,
                'unknown': note == 'UNKNOWN prompt',
                'messages': messages,
                'response': content,
            })
            print(f'fake-llm: chat {name} -> {note}', file=sys.stderr, flush=True)
            self._send(200, response)

        def _embeddings(self, path: str, body: dict) -> None:
            inputs = body.get('input')
            if isinstance(inputs, str):
                inputs = [inputs]
            if not isinstance(inputs, list) or not inputs:
                self._send(400, {'error': {'message': '`input` must be a string or a non-empty list',
                                           'type': 'invalid_request_error'}})
                return
            texts = [i if isinstance(i, str) else json.dumps(i) for i in inputs]
            dim = int(body.get('dimensions') or state.dim)
            as_base64 = body.get('encoding_format') == 'base64'
            data = []
            for i, text in enumerate(texts):
                vector = embedding(text, dim)
                value = (base64.b64encode(struct.pack(f'<{dim}f', *vector)).decode('ascii')
                         if as_base64 else vector)
                data.append({'object': 'embedding', 'index': i, 'embedding': value})
            tokens = sum(approx_tokens(t) for t in texts)
            state.record({
                'at': time.time(),
                'path': path,
                'model': body.get('model'),
                'input': texts,
                'dim': dim,
            })
            self._send(200, {
                'object': 'list',
                'data': data,
                'model': body.get('model') or 'fake-embedding',
                'usage': {'prompt_tokens': tokens, 'total_tokens': tokens},
            })

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--log', help='append every request as a JSON line to this file')
    parser.add_argument('--dim', type=int, default=384, help='embedding dimension (384)')
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), make_handler(State(args.log, args.dim)))
    server.daemon_threads = True
    print(f'fake-llm: listening on http://{args.host}:{server.server_port} (dim {args.dim})',
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
