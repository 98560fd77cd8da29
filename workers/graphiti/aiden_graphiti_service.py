#!/usr/bin/env python3
"""Aiden's knowledge layer: a thin HTTP service around graphiti-core 0.31.1.

    .stack/graphiti-venv/bin/python workers/graphiti/aiden_graphiti_service.py

Routes (JSON in and out; see README.md next to this file):
  GET  /healthz                  200 once the graph's indices are built, 503 before
  PUT  /episodes/{uuid}          save an Episodic node under exactly that uuid, if absent
  POST /episodes/{uuid}/extract  run graphiti's add_episode on the saved episode, once
  POST /embed                    {"texts": [...]} -> {"model", "dimension", "vectors"}: the
                                 embedder search uses (queries, and content at binding)
  GET  /debug/extractions        in-memory log of every extract call

Settings (environment):
  AIDEN_GRAPHITI_ADDR            host:port to listen on (127.0.0.1:8091)
  AIDEN_NEO4J_URI/USER/PASSWORD/DATABASE  the project's Neo4j, the same database as the API's
                                 (bolt://127.0.0.1:7687 / neo4j / - / neo4j)
  AIDEN_GRAPHITI_LLM_BASE_URL    OpenAI-compatible base URL (…/v1); unset or empty: extraction
                                 disabled (episodes are still saved)
  AIDEN_GRAPHITI_LLM_MODEL, AIDEN_GRAPHITI_LLM_SMALL_MODEL (= model), AIDEN_GRAPHITI_LLM_API_KEY
  ("none"), AIDEN_GRAPHITI_LLM_TEMPERATURE (0), AIDEN_GRAPHITI_LLM_TIMEOUT_SECS (120),
  AIDEN_GRAPHITI_LLM_MAX_RETRIES (2, the openai SDK's own retries),
  AIDEN_GRAPHITI_LLM_STRUCTURED_OUTPUT (json_schema | json_object),
  AIDEN_GRAPHITI_EMBEDDER (local: all-MiniLM-L6-v2 on this machine, aiden_embedder.py, 384
  dimensions | openai: an OpenAI-compatible embeddings endpoint, then
  AIDEN_GRAPHITI_EMBEDDER_BASE_URL (= LLM base URL) and AIDEN_GRAPHITI_EMBEDDER_MODEL
  (all-minilm)), AIDEN_GRAPHITI_EMBEDDING_DIM (384), AIDEN_GRAPHITI_LOG_LEVEL (INFO)
"""

from __future__ import annotations

import os
import sys

# graphiti-core reads both of these at import time: telemetry (PostHog, on by default) must never
# leave this machine, and EMBEDDING_DIM sizes the zero vector its search uses when it embeds
# nothing, so it must agree with the embedder's dimension.
os.environ['GRAPHITI_TELEMETRY_ENABLED'] = 'false'
_EMBEDDING_DIM_RAW = os.environ.get('AIDEN_GRAPHITI_EMBEDDING_DIM', '384').strip() or '384'
os.environ['EMBEDDING_DIM'] = _EMBEDDING_DIM_RAW
# The local embedder's matrix products run one BLAS thread each unless told otherwise (read when
# numpy loads). OpenBLAS's threads spin while they wait for each other: on a machine whose cores
# Neo4j and the runtime also use, a search's one-text embedding then waited for a core, p99
# 186 ms against 21 with one thread while another process kept one of two cores busy. Batches
# lose about a quarter of their speed on an idle machine; concurrent requests run in parallel.
for _blas_threads in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_blas_threads, '1')

import json  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

from aiohttp import web  # noqa: E402

# The settings and graphiti-core's side live beside this file (its directory is on sys.path when
# it runs as a script).
from aiden_graphiti_config import Config, ConfigError  # noqa: E402
from aiden_graphiti_store import (  # noqa: E402
    MAX_BODY,
    ApiError,
    Service,
    check_uuid,
    classify,
    utc_now,
)

log = logging.getLogger('aiden_graphiti')

# ---- HTTP ---------------------------------------------------------------------------------

SERVICE = web.AppKey('service', Service)


def json_response(status: int, body: Any) -> web.Response:
    return web.json_response(body, status=status, dumps=lambda o: json.dumps(o, ensure_ascii=False))


async def read_json(request: web.Request) -> dict[str, Any]:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, f'request body larger than {MAX_BODY} bytes')
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, f'request body larger than {MAX_BODY} bytes') from None
    if len(raw) > MAX_BODY:
        raise ApiError(413, f'request body larger than {MAX_BODY} bytes')
    try:
        body = json.loads(raw or b'null')
    except ValueError as e:
        raise ApiError(400, f'body is not valid JSON: {e}') from None
    if not isinstance(body, dict):
        raise ApiError(400, 'body must be a JSON object')
    return body


def require_ready(service: Service) -> None:
    if not service.ready:
        raise ApiError(503, f'graph not ready: {service.init_error or "starting"}', retryable=True)


async def healthz(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    body = {
        'ok': service.ready,
        'extraction': 'enabled' if service.cfg.extraction_enabled else 'disabled',
        'embedder': service.cfg.embedder_label() if service.embedder is not None else None,
        'database': service.cfg.neo4j_database,
    }
    if not service.ready:
        body['error'] = service.init_error or 'starting'
        return json_response(503, body)
    return json_response(200, body)


async def put_episode(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    uuid = check_uuid(request.match_info['uuid'])
    body = await read_json(request)
    require_ready(service)
    result = await service.put_episode(uuid, body)
    log.info('put %s group=%s created=%s', uuid, result['group_id'], result['created'])
    return json_response(200, result)


async def extract(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    uuid = check_uuid(request.match_info['uuid'])
    body = await read_json(request)
    record: dict[str, Any] = {
        'uuid': uuid,
        'group_id': body.get('group_id'),
        'previous_episode_uuids': body.get('previous_episode_uuids'),
        'ran': False,
        'at': utc_now().isoformat(),
        'status': 'rejected',
    }
    started = time.monotonic()
    http_status = 200
    try:
        require_ready(service)
        result = await service.extract(uuid, body, record)
        return json_response(200, result)
    except ApiError as e:
        http_status = e.status
        raise
    except Exception as e:
        http_status = classify(e)[0]
        record['status'] = 'error'
        raise
    finally:
        record['http_status'] = http_status
        record.setdefault('ms', round((time.monotonic() - started) * 1000))
        service.extractions.append(record)
        print(
            f'aiden-graphiti: extract uuid={uuid} group={record.get("group_id")} '
            f'previous={record.get("previous_episode_uuids")} status={record["status"]} '
            f'http={http_status} ran={record["ran"]} ms={record["ms"]}',
            file=sys.stderr,
            flush=True,
        )


MAX_EMBED_TEXTS = 256


async def embed(request: web.Request) -> web.Response:
    """The vectors search compares: one per text, in order, from the configured embedder."""
    service = request.app[SERVICE]
    body = await read_json(request)
    texts = body.get('texts')
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, '`texts` must be a list of strings')
    if len(texts) > MAX_EMBED_TEXTS:
        raise ApiError(400, f'at most {MAX_EMBED_TEXTS} texts per call')
    started = time.monotonic()
    vectors = await service.embed(texts)
    return json_response(
        200,
        {
            'model': service.cfg.embedder_model_name(),
            'dimension': len(vectors[0]) if vectors else service.cfg.embedding_dim,
            'vectors': vectors,
            'ms': round((time.monotonic() - started) * 1000, 2),
        },
    )


async def debug_extractions(request: web.Request) -> web.Response:
    return json_response(200, {'items': list(request.app[SERVICE].extractions)})


@web.middleware
async def errors(request: web.Request, handler):
    try:
        return await handler(request)
    except ApiError as e:
        return json_response(e.status, e.body)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return json_response(e.status, {'error': e.reason})
    except Exception as e:  # noqa: BLE001
        status, retryable, kind = classify(e)
        if status == 500:
            log.error('%s %s failed:\n%s', request.method, request.path, traceback.format_exc())
            return json_response(500, {'error': f'internal error: {type(e).__name__}', 'retryable': False})
        log.warning('%s %s failed (%s): %s: %s', request.method, request.path, kind, type(e).__name__, e)
        return json_response(status, {'error': f'{kind} unavailable: {type(e).__name__}: {e}', 'retryable': retryable})


def make_app(cfg: Config) -> web.Application:
    # One byte over the limit so that read_json, not aiohttp, decides (bodies of exactly 1 MiB pass).
    app = web.Application(middlewares=[errors], client_max_size=MAX_BODY + 1)
    service = Service(cfg)
    app[SERVICE] = service

    async def on_startup(app: web.Application) -> None:
        await service.start()

    async def on_cleanup(app: web.Application) -> None:
        await service.close()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_get('/healthz', healthz)
    app.router.add_put('/episodes/{uuid}', put_episode)
    app.router.add_post('/episodes/{uuid}/extract', extract)
    app.router.add_post('/embed', embed)
    app.router.add_get('/debug/extractions', debug_extractions)
    return app


def truncate_log_record(record: logging.LogRecord, limit: int = 2000) -> bool:
    message = record.getMessage()
    if len(message) > limit:
        record.msg = f'{message[:limit]}… [{len(message) - limit} more characters]'
        record.args = None
    return True


def main() -> None:
    level = os.environ.get('AIDEN_GRAPHITI_LOG_LEVEL', 'INFO').upper()
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        stream=sys.stderr,
        format='%(asctime)s %(levelname)s %(name)s: %(message)s',
    )
    # httpx (httpx2 under openai 3.x) logs every request at INFO, and the neo4j driver logs the
    # server's notifications (graphiti's queries name properties a fresh database has not seen) at
    # WARNING; the per-call extract line says what matters.
    for noisy in ('httpx', 'httpx2'):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger('neo4j.notifications').setLevel(logging.ERROR)
    # graphiti's drivers log a failed query with its parameters, i.e. whole episode contents (up to
    # 1 MiB): keep such lines short.
    for handler in logging.getLogger().handlers:
        handler.addFilter(truncate_log_record)
    try:
        cfg = Config.from_env(dict(os.environ))
    except ConfigError as e:
        print(f'aiden-graphiti: configuration error: {e}', file=sys.stderr)
        sys.exit(2)
    log.info('starting on %s:%d: %s', cfg.host, cfg.port, cfg.describe())
    web.run_app(make_app(cfg), host=cfg.host, port=cfg.port, print=None, access_log=None)


if __name__ == '__main__':
    main()
