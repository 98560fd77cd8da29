"""The Graphiti service's settings (AIDEN_GRAPHITI_*, AIDEN_NEO4J_*: aiden_graphiti_service.py's
docstring lists them) and the embedder they choose. Imported by the service after it has set
the environment graphiti-core reads at import time."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger('aiden_graphiti')


class ConfigError(Exception):
    pass


@dataclass
class Config:
    host: str
    port: int
    neo4j_uri: str
    neo4j_user: str
    neo4j_password: str
    neo4j_database: str
    llm_base_url: str
    llm_model: str
    llm_small_model: str
    llm_api_key: str
    llm_temperature: float
    llm_timeout: float
    llm_max_retries: int
    structured_output: str
    embedder: str
    embedder_base_url: str
    embedder_model: str
    embedding_dim: int

    @property
    def extraction_enabled(self) -> bool:
        return bool(self.llm_base_url)

    @staticmethod
    def from_env(env: dict[str, str]) -> 'Config':
        def get(name: str, default: str = '') -> str:
            value = env.get(name)
            return default if value is None or value.strip() == '' else value.strip()

        addr = get('AIDEN_GRAPHITI_ADDR', '127.0.0.1:8091')
        host, sep, port = addr.rpartition(':')
        if not sep or not port.isdigit():
            raise ConfigError(f'AIDEN_GRAPHITI_ADDR must be host:port, got {addr!r}')
        host = host.strip('[]') or '127.0.0.1'

        def integer(name: str, default: str) -> int:
            raw = get(name, default)
            try:
                return int(raw)
            except ValueError:
                raise ConfigError(f'{name} must be an integer, got {raw!r}') from None

        def number(name: str, default: str) -> float:
            raw = get(name, default)
            try:
                return float(raw)
            except ValueError:
                raise ConfigError(f'{name} must be a number, got {raw!r}') from None

        llm_base_url = get('AIDEN_GRAPHITI_LLM_BASE_URL').rstrip('/')
        llm_model = get('AIDEN_GRAPHITI_LLM_MODEL')
        if llm_base_url and not llm_model:
            raise ConfigError('AIDEN_GRAPHITI_LLM_MODEL is required when AIDEN_GRAPHITI_LLM_BASE_URL is set')
        structured = get('AIDEN_GRAPHITI_LLM_STRUCTURED_OUTPUT', 'json_schema')
        if structured not in ('json_schema', 'json_object'):
            raise ConfigError('AIDEN_GRAPHITI_LLM_STRUCTURED_OUTPUT must be json_schema or json_object')
        dim = integer('AIDEN_GRAPHITI_EMBEDDING_DIM', '384')
        if dim <= 0:
            raise ConfigError('AIDEN_GRAPHITI_EMBEDDING_DIM must be positive')
        embedder = get('AIDEN_GRAPHITI_EMBEDDER', 'local')
        if embedder not in ('local', 'openai'):
            raise ConfigError('AIDEN_GRAPHITI_EMBEDDER must be local or openai')
        if embedder == 'local' and dim != 384:
            raise ConfigError('the local embedder (all-MiniLM-L6-v2) has 384 dimensions: set '
                              'AIDEN_GRAPHITI_EMBEDDING_DIM=384 or AIDEN_GRAPHITI_EMBEDDER=openai')
        return Config(
            host=host,
            port=int(port),
            neo4j_uri=get('AIDEN_NEO4J_URI', 'bolt://127.0.0.1:7687'),
            neo4j_user=get('AIDEN_NEO4J_USER', 'neo4j'),
            neo4j_password=get('AIDEN_NEO4J_PASSWORD'),
            neo4j_database=get('AIDEN_NEO4J_DATABASE', 'neo4j'),
            llm_base_url=llm_base_url,
            llm_model=llm_model,
            llm_small_model=get('AIDEN_GRAPHITI_LLM_SMALL_MODEL', llm_model),
            llm_api_key=get('AIDEN_GRAPHITI_LLM_API_KEY', 'none'),
            llm_temperature=number('AIDEN_GRAPHITI_LLM_TEMPERATURE', '0'),
            llm_timeout=number('AIDEN_GRAPHITI_LLM_TIMEOUT_SECS', '120'),
            llm_max_retries=integer('AIDEN_GRAPHITI_LLM_MAX_RETRIES', '2'),
            structured_output=structured,
            embedder=embedder,
            embedder_base_url=get('AIDEN_GRAPHITI_EMBEDDER_BASE_URL', llm_base_url).rstrip('/'),
            embedder_model=get('AIDEN_GRAPHITI_EMBEDDER_MODEL', 'all-minilm'),
            embedding_dim=dim,
        )

    def embedder_model_name(self) -> str:
        """The model alone (no address): what /embed answers and search shows."""
        return 'all-MiniLM-L6-v2' if self.embedder == 'local' else self.embedder_model

    def embedder_label(self) -> str:
        if self.embedder == 'local':
            return 'all-MiniLM-L6-v2 (local)'
        return f'{self.embedder_model}@{self.embedder_base_url}'

    def describe(self) -> str:
        """For the start-up log line. Never includes the API key or passwords."""
        graph = f'neo4j {self.neo4j_uri} db={self.neo4j_database}'
        llm = (
            f'llm {self.llm_base_url} model={self.llm_model} small={self.llm_small_model}'
            if self.extraction_enabled
            else 'extraction disabled (AIDEN_GRAPHITI_LLM_BASE_URL unset)'
        )
        return f'{graph}; {llm}; embedder={self.embedder_label()} dim={self.embedding_dim}'


def local_embedder() -> Any:
    """graphiti's embedder interface over aiden_embedder.MiniLM, off the event loop (numpy)."""
    from graphiti_core.embedder.client import EmbedderClient

    from aiden_embedder import MiniLM

    class LocalEmbedder(EmbedderClient):
        def __init__(self) -> None:
            self.model = MiniLM()

        async def create(self, input_data: Any) -> list[float]:
            text = input_data if isinstance(input_data, str) else ' '.join(map(str, input_data))
            return (await asyncio.to_thread(self.model.embed, [text]))[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return await asyncio.to_thread(self.model.embed, input_data_list)

    return LocalEmbedder()
