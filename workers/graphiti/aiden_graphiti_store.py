"""What the Graphiti service does with graphiti-core on Aiden's Neo4j: save an Episode under the
uuid Aiden derived, extract from it once with the previous Episodes Aiden names, embed texts;
and how its errors map to HTTP statuses. The HTTP routes are in aiden_graphiti_service.py."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import traceback
from collections import deque
from datetime import datetime, timezone
from typing import Any

from aiden_graphiti_config import Config, local_embedder

log = logging.getLogger('aiden_graphiti')

MAX_BODY = 1024 * 1024  # 1 MiB: larger bodies are refused with 413
UUID_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$')
GROUP_RE = re.compile(r'^[A-Za-z0-9_-]{1,128}$')  # graphiti's validate_group_id, plus a length cap
SOURCES = ('message', 'text', 'json')
MARKER = 'aiden_extracted_at'
# The uniqueness constraints of cypher/schema/0007_knowledge.cypher (same names), made before
# graphiti's own indices: graphiti's plain range indices on the same keys (`episode_uuid`,
# `entity_uuid`) would otherwise make Neo4j refuse the constraints (IndexAlreadyExists).
CONSTRAINTS = (('episodic_uuid', 'Episodic', 'episode_uuid'), ('entity_uuid', 'Entity', 'entity_uuid'))


class ApiError(Exception):
    def __init__(self, status: int, message: str, **extra: Any):
        super().__init__(message)
        self.status = status
        self.body = {'error': message, **extra}


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def parse_rfc3339(value: Any, field: str) -> datetime:
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, f'`{field}` must be an RFC 3339 timestamp string')
    text = value.strip()
    if text.endswith(('Z', 'z')):
        text = text[:-1] + '+00:00'
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ApiError(400, f'`{field}` is not an RFC 3339 timestamp: {value!r}') from None
    if parsed.tzinfo is None:
        raise ApiError(400, f'`{field}` needs a UTC offset (RFC 3339), got {value!r}')
    return parsed.astimezone(timezone.utc)


def check_uuid(value: str) -> str:
    if not UUID_RE.match(value or ''):
        raise ApiError(400, 'the episode uuid must be 1-128 characters of [A-Za-z0-9._:-]')
    return value


def check_group(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ApiError(400, 'missing field `group_id`')
    if not GROUP_RE.match(value):
        raise ApiError(400, '`group_id` must be 1-128 characters of [A-Za-z0-9_-]')
    return value


def rows_of(result: Any) -> list[dict[str, Any]]:
    """Rows of graphiti's Neo4jDriver.execute_query (an EagerResult of neo4j.Record)."""
    if not result:
        return []
    records = result[0]
    return [{k: r[k] for k in r.keys()} for r in records]


def classify(exc: BaseException) -> tuple[int, bool, str]:
    """(HTTP status, retryable, kind) for a failure inside add_episode or a graph call."""
    import httpx
    import openai
    import pydantic
    from graphiti_core.llm_client.errors import EmptyResponseError, RateLimitError, RefusalError

    permanent_llm = (
        openai.AuthenticationError,
        openai.PermissionDeniedError,
        openai.BadRequestError,
        openai.NotFoundError,
        openai.UnprocessableEntityError,
        RefusalError,
    )
    if isinstance(exc, permanent_llm):
        return 502, False, 'llm'
    if isinstance(
        exc,
        (
            openai.APIError,
            RateLimitError,
            EmptyResponseError,
            json.JSONDecodeError,
            pydantic.ValidationError,
            httpx.HTTPError,
        ),
    ):
        return 502, True, 'llm'
    import neo4j.exceptions as neo4j_exc

    graph_errors = (
        ConnectionError,
        TimeoutError,
        OSError,
        neo4j_exc.ServiceUnavailable,
        neo4j_exc.SessionExpired,
        neo4j_exc.TransientError,
    )
    if isinstance(exc, graph_errors):
        return 503, True, 'graph'
    return 500, False, 'internal'


class Service:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.ready = False
        self.init_error: str | None = None
        self.driver: Any = None
        self.llm_client: Any = None
        self.embedder: Any = None
        self.cross_encoder: Any = None
        self.graphiti: Any = None
        self.group_locks: dict[str, asyncio.Lock] = {}
        self.put_lock = asyncio.Lock()
        self.extractions: deque[dict[str, Any]] = deque(maxlen=10_000)
        self._init_task: asyncio.Task | None = None

    # ---- start-up -------------------------------------------------------------------------

    def _make_driver(self) -> Any:
        from graphiti_core.driver.neo4j_driver import Neo4jDriver

        driver = Neo4jDriver(
            self.cfg.neo4j_uri,
            self.cfg.neo4j_user,
            self.cfg.neo4j_password,
            database=self.cfg.neo4j_database,
        )
        # Neo4jDriver.__init__ schedules build_indices_and_constraints() as a background task.
        # Cancelled before it runs (no await since): _initialise builds them after CONSTRAINTS.
        task = getattr(driver, '_init_task', None)
        if task is not None:
            task.cancel()
            driver._init_task = None
        return driver

    def _make_llm_clients(self) -> None:
        from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
        from graphiti_core.llm_client.config import LLMConfig
        from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
        from openai import AsyncOpenAI

        cfg = self.cfg
        chat = AsyncOpenAI(
            api_key=cfg.llm_api_key,
            base_url=cfg.llm_base_url,
            timeout=cfg.llm_timeout,
            max_retries=cfg.llm_max_retries,
        )
        llm_config = LLMConfig(
            api_key=cfg.llm_api_key,
            model=cfg.llm_model,
            small_model=cfg.llm_small_model,
            base_url=cfg.llm_base_url,
            temperature=cfg.llm_temperature,
        )
        self.llm_client = OpenAIGenericClient(
            config=llm_config, client=chat, structured_output_mode=cfg.structured_output
        )
        # add_episode never reranks (its searches use RRF), but Graphiti() would otherwise build
        # an OpenAIRerankerClient against api.openai.com that needs OPENAI_API_KEY.
        self.cross_encoder = OpenAIRerankerClient(config=llm_config, client=chat)

    def _make_embedder(self) -> None:
        """Built whether or not extraction is enabled: search embeds queries and content with it."""
        from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
        from openai import AsyncOpenAI

        cfg = self.cfg
        if cfg.embedder == 'local':
            self.embedder = local_embedder()
            return
        if not cfg.embedder_base_url:
            return  # no endpoint: /embed answers 503
        embed_client = AsyncOpenAI(
            api_key=cfg.llm_api_key,
            base_url=cfg.embedder_base_url,
            timeout=cfg.llm_timeout,
            max_retries=cfg.llm_max_retries,
        )
        self.embedder = OpenAIEmbedder(
            config=OpenAIEmbedderConfig(
                embedding_model=cfg.embedder_model,
                api_key=cfg.llm_api_key,
                base_url=cfg.embedder_base_url,
                embedding_dim=cfg.embedding_dim,
            ),
            client=embed_client,
        )

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if self.embedder is None:
            raise ApiError(503, 'no embedder: set AIDEN_GRAPHITI_EMBEDDER_BASE_URL', retryable=True)
        if not texts:
            return []
        return [list(map(float, v)) for v in await self.embedder.create_batch(texts)]

    async def start(self) -> None:
        self.driver = self._make_driver()
        self._make_embedder()
        if self.cfg.embedder == 'local' and self.embedder is not None:
            # The model's first pass before the port opens, so a query never pays for it.
            started = time.monotonic()
            await self.embedder.create_batch(['warming up the embedder'])
            log.info('embedder warmed in %.0f ms', (time.monotonic() - started) * 1000)
        if self.cfg.extraction_enabled:
            self._make_llm_clients()
        self._init_task = asyncio.create_task(self._initialise())

    async def _initialise(self) -> None:
        delay = 0.5
        while True:
            try:
                await self._ensure_constraints()
                await self._build_indices()
                self.ready = True
                self.init_error = None
                log.info('ready: indices built (%s)', self.cfg.describe())
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001
                self.init_error = f'{type(e).__name__}: {e}'
                log.warning('graph not ready (%s); retrying in %.1fs', self.init_error, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _ensure_constraints(self) -> None:
        """Our uniqueness constraints on Episodic/Entity uuid (CONSTRAINTS), whichever of `aiden
        migrate` and this service reaches a fresh database first. A plain index of graphiti's on
        the same key (left by an older service) is dropped first, so that the constraint can be made."""
        for name, label, graphiti_index in CONSTRAINTS:
            query = 'SHOW CONSTRAINTS YIELD name WHERE name = $name RETURN name'
            if rows_of(await self.driver.execute_query(query, name=name)):
                continue
            stale = rows_of(
                await self.driver.execute_query(
                    'SHOW INDEXES YIELD name, owningConstraint WHERE name IN $names '
                    'AND owningConstraint IS NULL RETURN name',
                    names=[name, graphiti_index],
                )
            )
            for row in stale:
                log.info('dropping index %s so that constraint %s can be made', row['name'], name)
                await self.driver.execute_query(f'DROP INDEX {row["name"]} IF EXISTS')
            await self.driver.execute_query(
                f'CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{label}) REQUIRE n.uuid IS UNIQUE'
            )

    async def _build_indices(self) -> None:
        """graphiti's range and full-text indices (IF NOT EXISTS: those CONSTRAINTS already cover
        are no-ops). Neo4jDriver ignores the EquivalentSchemaRuleAlreadyExists of a race."""
        await self.driver.build_indices_and_constraints()

    async def close(self) -> None:
        if self._init_task is not None and not self._init_task.done():
            self._init_task.cancel()
        if self.driver is not None:
            try:
                await self.driver.close()
            except Exception:  # noqa: BLE001
                pass

    # ---- per-group handles ----------------------------------------------------------------

    def graphiti_for(self) -> Any:
        """One Graphiti on the one database: all groups share it (Neo4jDriver.clone() returns the
        same driver, so add_episode's _resolve_request_scope never makes a new one)."""
        from graphiti_core import Graphiti

        if self.graphiti is None:
            self.graphiti = Graphiti(
                graph_driver=self.driver,
                llm_client=self.llm_client,
                embedder=self.embedder,
                cross_encoder=self.cross_encoder,
            )
        return self.graphiti

    def group_lock(self, group_id: str) -> asyncio.Lock:
        lock = self.group_locks.get(group_id)
        if lock is None:
            lock = self.group_locks[group_id] = asyncio.Lock()
        return lock

    async def owner_elsewhere(self, uuid: str, group_id: str) -> str | None:
        """The group, other than group_id, that holds an episode with this uuid (None if none)."""
        rows = rows_of(
            await self.driver.execute_query(
                'MATCH (e:Episodic {uuid: $uuid}) RETURN e.group_id AS group_id', uuid=uuid
            )
        )
        others = [r['group_id'] for r in rows if r['group_id'] != group_id]
        return others[0] if others else None

    # ---- operations -----------------------------------------------------------------------

    async def put_episode(self, uuid: str, body: dict[str, Any]) -> dict[str, Any]:
        from graphiti_core.nodes import EpisodeType, EpisodicNode

        missing = [
            f
            for f in ('name', 'group_id', 'source', 'source_description', 'content', 'valid_at')
            if f not in body or body[f] is None
        ]
        if missing:
            raise ApiError(400, f'missing field(s): {", ".join(missing)}', missing=missing)
        group_id = check_group(body['group_id'])
        for f in ('name', 'source_description', 'content'):
            if not isinstance(body[f], str):
                raise ApiError(400, f'`{f}` must be a string')
        if not body['name'].strip():
            raise ApiError(400, '`name` must not be empty')
        if body['source'] not in SOURCES:
            raise ApiError(400, f'`source` must be one of {", ".join(SOURCES)}')
        valid_at = parse_rfc3339(body['valid_at'], 'valid_at')

        async with self.put_lock:
            driver = self.driver
            rows = rows_of(
                await driver.execute_query(
                    'MATCH (e:Episodic {uuid: $uuid}) RETURN e.group_id AS group_id', uuid=uuid
                )
            )
            if rows and all(r['group_id'] != group_id for r in rows):
                raise ApiError(409, f'episode {uuid} exists in another group', group_id=rows[0]['group_id'])
            if rows:
                return {'uuid': uuid, 'group_id': group_id, 'created': False}
            episode = EpisodicNode(
                uuid=uuid,
                name=body['name'],
                group_id=group_id,
                labels=[],
                source=EpisodeType.from_str(body['source']),
                source_description=body['source_description'],
                content=body['content'],
                created_at=utc_now(),
                valid_at=valid_at,
            )
            await episode.save(driver)
            return {'uuid': uuid, 'group_id': group_id, 'created': True}

    async def read_extraction(self, driver: Any, uuid: str) -> tuple[list[dict], list[dict]]:
        """What a finished extraction left in the graph: the episode's MENTIONS targets and the
        entity edges listed in its entity_edges."""
        entities = rows_of(
            await driver.execute_query(
                'MATCH (e:Episodic {uuid: $uuid})-[:MENTIONS]->(n:Entity) '
                'RETURN DISTINCT n.uuid AS uuid, n.name AS name, n.summary AS summary, '
                'labels(n) AS labels',
                uuid=uuid,
            )
        )
        edge_uuids_rows = rows_of(
            await driver.execute_query(
                'MATCH (e:Episodic {uuid: $uuid}) RETURN e.entity_edges AS entity_edges', uuid=uuid
            )
        )
        edge_uuids = list((edge_uuids_rows[0]['entity_edges'] or []) if edge_uuids_rows else [])
        edges: list[dict] = []
        if edge_uuids:
            edges = rows_of(
                await driver.execute_query(
                    'MATCH (s:Entity)-[r:RELATES_TO]->(t:Entity) WHERE r.uuid IN $uuids '
                    'RETURN r.uuid AS uuid, s.uuid AS source_node_uuid, t.uuid AS target_node_uuid, '
                    'r.name AS name, r.fact AS fact',
                    uuids=edge_uuids,
                )
            )
        for entity in entities:
            entity['labels'] = sorted(entity.get('labels') or [])
            entity['summary'] = entity.get('summary') or ''
        return sort_entities(entities), sort_edges(edges)

    async def extract(self, uuid: str, body: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
        from graphiti_core.nodes import EpisodicNode

        group_id = check_group(body.get('group_id'))
        previous = body.get('previous_episode_uuids', [])
        if previous is None:
            previous = []
        if not isinstance(previous, list) or not all(isinstance(p, str) and p for p in previous):
            raise ApiError(400, '`previous_episode_uuids` must be a list of episode uuids')
        previous = list(dict.fromkeys(previous))  # de-duplicated, order kept
        record.update(group_id=group_id, previous_episode_uuids=previous)

        if not self.cfg.extraction_enabled:
            record['status'] = 'skipped'
            return {'status': 'skipped', 'entities': [], 'edges': []}
        if uuid in previous:
            raise ApiError(422, 'an episode cannot be its own previous episode', unknown=[uuid])

        async with self.group_lock(group_id):
            driver = self.driver
            rows = rows_of(
                await driver.execute_query(
                    f'MATCH (e:Episodic {{uuid: $uuid}}) RETURN e.group_id AS group_id, '
                    f'e.{MARKER} AS extracted_at',
                    uuid=uuid,
                )
            )
            rows = [r for r in rows if r['group_id'] == group_id]
            if not rows:
                owner = await self.owner_elsewhere(uuid, group_id)
                if owner is not None:
                    raise ApiError(409, f'episode {uuid} belongs to another group', group_id=owner)
                raise ApiError(404, f'episode {uuid} was not saved in group {group_id}')
            if rows[0]['extracted_at']:
                entities, edges = await self.read_extraction(driver, uuid)
                record.update(status='already_extracted')
                return {
                    'status': 'extracted',
                    'alreadyExtracted': True,
                    'extractedAt': rows[0]['extracted_at'],
                    'entities': entities,
                    'edges': edges,
                }

            if previous:
                found = rows_of(
                    await driver.execute_query(
                        'MATCH (e:Episodic) WHERE e.uuid IN $uuids '
                        'RETURN e.uuid AS uuid, e.group_id AS group_id',
                        uuids=previous,
                    )
                )
                known = {r['uuid'] for r in found if r['group_id'] == group_id}
                unknown = [p for p in previous if p not in known]
                if unknown:
                    raise ApiError(
                        422,
                        f'previous episode(s) not saved in group {group_id}: {", ".join(unknown)}',
                        unknown=unknown,
                    )

            episode = await EpisodicNode.get_by_uuid(driver, uuid)
            graphiti = self.graphiti_for()
            record['ran'] = True
            started = time.monotonic()
            try:
                result = await graphiti.add_episode(
                    name=episode.name,
                    episode_body=episode.content,
                    source_description=episode.source_description,
                    reference_time=episode.valid_at,
                    source=episode.source,
                    group_id=group_id,
                    uuid=uuid,
                    previous_episode_uuids=previous,
                )
            except Exception as e:
                status, retryable, kind = classify(e)
                record.update(status=f'failed:{kind}', ms=round((time.monotonic() - started) * 1000))
                if status == 500:
                    log.error('add_episode %s failed:\n%s', uuid, traceback.format_exc())
                else:
                    log.warning('add_episode %s failed (%s): %s: %s', uuid, kind, type(e).__name__, e)
                what = {'llm': 'LLM or embedder call failed', 'graph': 'graph database unavailable'}
                raise ApiError(
                    status,
                    f'{what.get(kind, "extraction failed")}: {type(e).__name__}: {e}',
                    retryable=retryable,
                ) from None
            record['ms'] = round((time.monotonic() - started) * 1000)

            # graphiti saves the episode with `SET n = {...}`, which drops every property it does
            # not know: the marker can only be written after add_episode has returned.
            at = utc_now().isoformat()
            await driver.execute_query(
                f'MATCH (e:Episodic {{uuid: $uuid}}) SET e.{MARKER} = $at, '
                'e.aiden_previous_episode_uuids = $previous RETURN e.uuid AS uuid',
                uuid=uuid,
                at=at,
                previous=previous,
            )
            record['status'] = 'extracted'
            entities = [
                {
                    'uuid': n.uuid,
                    'name': n.name,
                    'summary': n.summary or '',
                    'labels': sorted(n.labels or []),
                }
                for n in result.nodes
            ]
            edges = [
                {
                    'uuid': e.uuid,
                    'source_node_uuid': e.source_node_uuid,
                    'target_node_uuid': e.target_node_uuid,
                    'name': e.name,
                    'fact': e.fact,
                }
                for e in result.edges
            ]
            return {
                'status': 'extracted',
                'alreadyExtracted': False,
                'extractedAt': at,
                'entities': sort_entities(entities),
                'edges': sort_edges(edges),
            }


def sort_entities(entities: list[dict]) -> list[dict]:
    return sorted(entities, key=lambda e: (str(e.get('name') or ''), str(e.get('uuid'))))


def sort_edges(edges: list[dict]) -> list[dict]:
    return sorted(edges, key=lambda e: (str(e.get('fact') or ''), str(e.get('uuid'))))
