#!/usr/bin/env python3
"""Checks tests/knowledge/recall_corpus.json, the semantic-search recall corpus.

1. Shape: at least 55 facts (ids unique, one conversation each, `filler` a string or null) and at
   least 30 questions, each about a different, existing fact.
2. Paraphrase rule: no question shares a content word with its fact's message. Words are
   lowercased runs of letters/digits; stopwords (NLTK's English list plus auxiliaries and 'us') are dropped; two
   words are the same if their crude stems meet (trailing -s/-es/-ies/-ed/-ing stripped, with the
   e/doubled-consonant variants) or if one is a prefix of the other of length >= 5.
   Every offending pair is printed and the script exits 1.
3. Recall (printed, not asserted; tests/knowledge/main.rs asserts): every fact message and every
   filler is a document, embedded with workers/graphiti/aiden_embedder.py's MiniLM; per question
   all documents are ranked by cosine similarity; a hit is the question's own fact message.
   Prints recall@5, MRR and the questions missing the top 5. `--words-only` skips this step.

    .stack/graphiti-venv/bin/python tests/knowledge/recall_corpus_check.py [--words-only] [CORPUS]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STOPWORDS = set("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom whose this that
these those am is are was were be been being have has had having do does did doing a an the and
but if or because as until while of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here
there when where why how all any both each few more most other some such no nor not only own same
so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn
hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn could would might
must shall may us
""".split())


def variants(word: str) -> set[str]:
    """The word and its crude stems (plural, -ed, -ing and their e/doubled-consonant forms)."""
    out = {word}
    for suffix, repl in (('ies', 'y'), ('es', ''), ('es', 'e'), ('s', ''), ('ed', ''), ('ed', 'e'),
                         ('ing', ''), ('ing', 'e')):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: len(word) - len(suffix)] + repl
            out.add(base)
            if suffix in ('ed', 'ing') and len(base) > 3 and base[-1] == base[-2]:
                out.add(base[:-1])  # running -> run, stopped -> stop
    return out


def content_words(text: str) -> set[str]:
    words = re.findall(r'[a-z0-9]+', text.lower().replace('\u2019', "'"))
    return {w for w in words if w not in STOPWORDS}


def same(a: str, b: str) -> bool:
    for x in variants(a):
        for y in variants(b):
            short, long_ = sorted((x, y), key=len)
            if x == y or (len(short) >= 5 and long_.startswith(short)):
                return True
    return False


def shared_words(question: str, fact: str) -> list[str]:
    """The content words a question shares with its fact, as `question~fact` pairs, sorted."""
    return sorted({f'{a}~{b}' for a in content_words(question)
                   for b in content_words(fact) if same(a, b)})


def shape_errors(corpus: dict) -> list[str]:
    facts, questions = corpus['facts'], corpus['questions']
    ids = [f['id'] for f in facts]
    errors = []
    if len(facts) < 55:
        errors.append(f'{len(facts)} facts, fewer than 55')
    if len(questions) < 30:
        errors.append(f'{len(questions)} questions, fewer than 30')
    if len(set(ids)) != len(ids):
        errors.append('duplicate fact ids')
    errors += [f"fact {f['id']}: filler neither a string nor null" for f in facts
               if not (f.get('filler') is None or isinstance(f['filler'], str))]
    asked = [q['fact'] for q in questions]
    errors += [f'question about unknown fact {a}' for a in asked if a not in ids]
    if len(set(asked)) != len(asked):
        errors.append('two questions about one fact')
    return errors


def recall(corpus: dict) -> None:
    sys.path.insert(0, str(ROOT / 'workers' / 'graphiti'))
    import numpy as np  # noqa: PLC0415
    from aiden_embedder import MiniLM  # noqa: PLC0415

    docs = []  # (fact id, is the fact's message, text)
    for f in corpus['facts']:
        docs.append((f['id'], True, f['message']))
        if f.get('filler'):
            docs.append((f['id'], False, f['filler']))
    model = MiniLM()
    doc_vectors = np.array(model.embed(d[2] for d in docs))
    question_vectors = np.array(model.embed(q['question'] for q in corpus['questions']))
    hits, reciprocal, misses = 0, 0.0, []
    for q, vector in zip(corpus['questions'], question_vectors):
        order = np.argsort(-(doc_vectors @ vector), kind='stable')
        ranked = [docs[i] for i in order]
        rank = next(i for i, d in enumerate(ranked) if d[0] == q['fact'] and d[1]) + 1
        reciprocal += 1.0 / rank
        if rank <= 5:
            hits += 1
        else:
            top = '; '.join(f"{d[0]}{'' if d[1] else '(filler)'}" for d in ranked[:5])
            misses.append(f"  {q['fact']} rank {rank}: {q['question']!r}  top 5: {top}")
    n = len(corpus['questions'])
    print(f'{len(docs)} documents, {n} questions: recall@5 {hits}/{n} = {hits / n:.1%}, '
          f'MRR {reciprocal / n:.3f}')
    if misses:
        print('questions missing the top 5:')
        print('\n'.join(misses))


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    path = Path(args[0]) if args else Path(__file__).with_name('recall_corpus.json')
    corpus = json.loads(path.read_text(encoding='utf-8'))
    errors = shape_errors(corpus)
    messages = {f['id']: f['message'] for f in corpus['facts']}
    for q in corpus['questions']:
        fact = messages.get(q['fact'], '')
        shared = shared_words(q['question'], fact)
        if shared:
            errors.append(f"{q['fact']} shares {', '.join(shared)}: {q['question']!r} / {fact!r}")
    print(f"{len(corpus['facts'])} facts, {len(corpus['questions'])} questions, "
          f'{len(errors)} problem(s)')
    for error in errors:
        print('  ' + error)
    if '--words-only' not in sys.argv:
        recall(corpus)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
