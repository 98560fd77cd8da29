#!/usr/bin/env python3
"""Checks tests/knowledge/twins_corpus.json, the near-twin recall corpus of issue #52.

1. Shape: at least 55 pairs and at least 10 supersessions; pair, fact and supersession ids
   unique; each pair has two facts and two questions, one about each of its facts; each
   supersession has `old`, `new`, `q` and `current` ('old' or 'new'). Exits 1 on any problem.
2. Paraphrase rule: no question shares a content word with its own fact's message (sharing with
   the twin is allowed), by recall_corpus_check.py's word, stem and stopword rule (imported from
   it). Every offending question is printed and the script exits 1.
3. Recall (printed, not asserted): every fact message of every pair is a document, embedded with
   workers/graphiti/aiden_embedder.py's MiniLM; per question all documents are ranked by cosine
   similarity. Prints recall@1, recall@5 and MRR over all questions, how often the twin ranks
   above the right fact, and the questions not at rank 1. Supersessions: the old and new messages
   are added as documents; per supersession question, whether the current message ranks above the
   other one. `--words-only` skips this step.
4. SRCH-7's rule for what is current (the cue lists of
   crates/domain/src/knowledge/currency_cues.json), offline: how many supersessions it finds and
   how many edges it draws that are not one (printed, not asserted; tests/knowledge/currency.rs
   asserts them through the API).
5. The last line printed is one JSON object with those figures (or only the checks' with
   --words-only).

    .stack/graphiti-venv/bin/python tests/knowledge/twins_corpus_check.py [--words-only] [CORPUS]
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_corpus_check import shared_words  # noqa: E402


def shape_errors(corpus: dict) -> list[str]:
    pairs, sups = corpus.get('pairs', []), corpus.get('supersessions', [])
    errors = []
    if len(pairs) < 55:
        errors.append(f'{len(pairs)} pairs, fewer than 55')
    if len(sups) < 10:
        errors.append(f'{len(sups)} supersessions, fewer than 10')
    ids = [p.get('id') for p in pairs] + [s.get('id') for s in sups]
    for p in pairs:
        facts, questions = p.get('facts', []), p.get('questions', [])
        if len(facts) != 2:
            errors.append(f"pair {p.get('id')}: {len(facts)} facts, not 2")
        if len(questions) != 2:
            errors.append(f"pair {p.get('id')}: {len(questions)} questions, not 2")
        fact_ids = [f.get('id') for f in facts]
        ids += fact_ids
        errors += [f"pair {p.get('id')}: fact {f.get('id')} has no message" for f in facts
                   if not isinstance(f.get('message'), str) or not f['message'].strip()]
        asked = [q.get('fact') for q in questions]
        errors += [f"pair {p.get('id')}: question about {a}, not a fact of the pair"
                   for a in asked if a not in fact_ids]
        if sorted(asked) != sorted(fact_ids):
            errors.append(f"pair {p.get('id')}: questions are not one per fact ({asked})")
        errors += [f"pair {p.get('id')}: a question has no text" for q in questions
                   if not isinstance(q.get('q'), str) or not q['q'].strip()]
    for s in sups:
        missing = [k for k in ('old', 'new', 'q') if not isinstance(s.get(k), str) or not s[k].strip()]
        if missing:
            errors.append(f"supersession {s.get('id')}: missing {', '.join(missing)}")
        if s.get('current') not in ('old', 'new'):
            errors.append(f"supersession {s.get('id')}: current is {s.get('current')!r}, not old/new")
    dupes = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    if dupes:
        errors.append(f'duplicate ids: {", ".join(map(str, dupes))}')
    return errors


def paraphrase_errors(corpus: dict) -> list[str]:
    errors = []
    for p in corpus['pairs']:
        messages = {f['id']: f['message'] for f in p['facts']}
        for q in p['questions']:
            fact = messages.get(q['fact'], '')
            shared = shared_words(q['q'], fact)
            if shared:
                errors.append(f"{q['fact']} shares {', '.join(shared)}: {q['q']!r} / {fact!r}")
    return errors


def recall(corpus: dict) -> dict:
    sys.path.insert(0, str(ROOT / 'workers' / 'graphiti'))
    import numpy as np  # noqa: PLC0415
    from aiden_embedder import MiniLM  # noqa: PLC0415

    started = time.monotonic()
    twin_of, docs = {}, []  # docs: (fact id, text)
    for p in corpus['pairs']:
        a, b = (f['id'] for f in p['facts'])
        twin_of[a], twin_of[b] = b, a
        docs += [(f['id'], f['message']) for f in p['facts']]
    sups = corpus['supersessions']
    sup_docs = [(f"{s['id']}:{k}", s[k]) for s in sups for k in ('old', 'new')]
    questions = [q for p in corpus['pairs'] for q in p['questions']]

    model = MiniLM()
    loaded = time.monotonic()
    doc_vectors = np.array(model.embed(d[1] for d in docs + sup_docs))
    question_vectors = np.array(model.embed(q['q'] for q in questions))
    sup_vectors = np.array(model.embed(s['q'] for s in sups))
    embedded = time.monotonic()
    texts = len(docs) + len(sup_docs) + len(questions) + len(sups)

    fact_vectors = doc_vectors[: len(docs)]
    at1 = at5 = twin_first = 0
    reciprocal, misses = 0.0, []
    for q, vector in zip(questions, question_vectors):
        order = np.argsort(-(fact_vectors @ vector), kind='stable')
        ranked = [docs[i][0] for i in order]
        rank = ranked.index(q['fact']) + 1
        reciprocal += 1.0 / rank
        at1 += rank == 1
        at5 += rank <= 5
        twin_above = ranked.index(twin_of[q['fact']]) < rank - 1
        twin_first += twin_above
        if rank > 1:
            top = ', '.join(ranked[:3])
            misses.append(f"  {q['fact']} rank {rank}{' (twin above)' if twin_above else ''}: "
                          f"{q['q']!r}  top 3: {top}")
    n = len(questions)
    print(f'{len(docs)} fact documents, {n} questions: recall@1 {at1}/{n} = {at1 / n:.1%}, '
          f'recall@5 {at5}/{n} = {at5 / n:.1%}, MRR {reciprocal / n:.3f}; '
          f'twin first: {twin_first} of {n}')
    if misses:
        print('questions not at rank 1:')
        print('\n'.join(misses))

    ids = [d[0] for d in docs + sup_docs]
    current_first, sup_lines = 0, []
    for s, vector in zip(sups, sup_vectors):
        order = np.argsort(-(doc_vectors @ vector), kind='stable')
        ranked = [ids[i] for i in order]
        other = 'old' if s['current'] == 'new' else 'new'
        rank_current = ranked.index(f"{s['id']}:{s['current']}") + 1
        rank_other = ranked.index(f"{s['id']}:{other}") + 1
        ok = rank_current < rank_other
        current_first += ok
        sup_lines.append(f"  {s['id']} {s['current']} at {rank_current}, {other} at {rank_other}"
                         f"{'' if ok else '  <- superseded first'}: {s['q']!r}")
    m = len(sups)
    print(f'{len(ids)} documents (facts + supersession messages), {m} supersession questions: '
          f'current above superseded {current_first} of {m}')
    print('\n'.join(sup_lines))
    print(f'model load {loaded - started:.1f} s, embedding {texts} texts {embedded - loaded:.1f} s')
    right, wrong = supersession_rule(docs + sup_docs, doc_vectors, sups)
    return {
        'rule_found': right, 'rule_wrong': wrong,
        'pairs': len(corpus['pairs']), 'questions': n, 'documents': len(docs),
        'recall_at_1': round(at1 / n, 4), 'recall_at_5': round(at5 / n, 4),
        'mrr': round(reciprocal / n, 4), 'twin_first': twin_first,
        'supersessions': m, 'current_first': current_first,
    }


CUES = ROOT / 'crates' / 'domain' / 'src' / 'knowledge' / 'currency_cues.json'


def words(text: str) -> list[str]:
    return [w for w in re.split(r"[^\w'’]+", text.lower()) if w]


def words_outside_names(text: str) -> list[str]:
    """As currency.rs: a word capitalised inside a sentence (not its first) is a name ('New
    York'), kept as an empty word so no cue matches it."""
    out, first = [], True
    for token in re.findall(r"[\w'’]+|[.!?;:\n]", text):
        if token in '.!?;:\n':
            first = True
            continue
        out.append('' if not first and token[0].isupper() else token.lower())
        first = False
    return out


def says(text: str, phrases: list[str]) -> bool:
    w = words_outside_names(text)
    return any(w[i:i + len(p)] == p for p in map(words, phrases)
               for i in range(len(w) - len(p) + 1))


def supersession_rule(docs, vectors, sups) -> tuple[int, int]:
    """SRCH-7's rule (crates/domain/src/knowledge/currency.rs), offline: in the order the
    integration test says them (the pairs' facts, the older messages, the newer ones), a message
    with a change cue supersedes the most similar earlier one within the rule's cosine. How many
    supersessions it finds, and how many edges it draws that are not one."""
    cues = json.loads(CUES.read_text(encoding='utf-8'))
    order = sorted(range(len(docs)), key=lambda i: docs[i][0].endswith(':new'))
    right = wrong = 0
    lines = []
    for n, i in enumerate(order[1:], start=1):
        doc_id, text = docs[i]
        if not says(text, cues['change']):
            continue
        earlier = order[:n]
        sims = vectors[earlier] @ vectors[i]
        best = int(sims.argmax())
        if sims[best] < cues['minSimilarity']:
            continue
        old_id = docs[earlier[best]][0]
        ok = doc_id.endswith(':new') and old_id == doc_id[:-4] + ':old'
        right += ok
        wrong += not ok
        if not ok:
            lines.append(f'  wrongly: {doc_id} supersedes {old_id} (cosine {sims[best]:.2f})')
    print(f'the rule (SRCH-7): {right} of {len(sups)} supersessions found, {wrong} wrong')
    print('\n'.join(lines))
    return right, wrong


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    path = Path(args[0]) if args else Path(__file__).with_name('twins_corpus.json')
    corpus = json.loads(path.read_text(encoding='utf-8'))
    errors = shape_errors(corpus)
    if errors:
        print(f'{len(errors)} shape problem(s):')
        print('\n'.join('  ' + e for e in errors))
        print(json.dumps({'shape_problems': len(errors)}))
        return 1
    errors = paraphrase_errors(corpus)
    print(f"{len(corpus['pairs'])} pairs, {2 * len(corpus['pairs'])} questions, "
          f"{len(corpus['supersessions'])} supersessions, {len(errors)} paraphrase problem(s)")
    for error in errors:
        print('  ' + error)
    figures = {'shape_problems': 0, 'paraphrase_problems': len(errors)}
    if '--words-only' not in sys.argv:
        figures.update(recall(corpus))
    print(json.dumps(figures))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
