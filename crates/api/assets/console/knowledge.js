// Recall in the console: a search over everything the signed-in user said, was
// answered or had extracted (GET /v1/search), and an Entity's page (GET /v1/entities/{uuid}/context):
// its summary and facets, the messages that mention it, its facts and neighbours.

import { get } from './api.js';
import { explain } from './words.js';
import { badge, h, mount, when } from './dom.js';
import { lineageQuery, neo4jLink } from './neo4j.js';

const KINDS = ['episode', 'entity', 'fact', 'summary', 'introspection', 'memory'];
const KIND_NAME = {
  episode: 'Message', entity: 'Entity', fact: 'Fact', summary: 'Summary', introspection: 'Note to self',
  memory: 'Memory',
};

function params() {
  return new URLSearchParams(location.hash.split('?')[1] || '');
}

/** Where a hit came from, as links: the conversation, opened at the message itself
 * (`#/c/<id>?alt=<alternativeId>`) when the hit names one, and whether that message is on its
 * Turn's active branch. */
function origin(s) {
  if (!s || !s.conversationId) return null;
  const at = s.alternativeId ? `?alt=${encodeURIComponent(s.alternativeId)}` : '';
  return h('span.origin',
    h('a', { href: `#/c/${encodeURIComponent(s.conversationId)}${at}` }, s.conversationTitle || 'a conversation'),
    s.activeBranch === false ? [' ', badge('inactive', 'Not the active version of its Turn')] : null);
}

// SRCH-6: the signals that found a hit strongly enough to list it.
const FOUND_BY = {
  meaning: ['by meaning', 'Close in meaning to what you asked'],
  words: ['by words', 'Shares your words'],
  entity: ['through an entity', 'Mentions something your search names'],
};

function foundBy(hit) {
  return h('span.found-by', (hit.foundBy || []).map((f) => {
    const [word, title] = FOUND_BY[f] || [f, ''];
    return h('span.found', { title, dataset: { by: f } }, word);
  }));
}

/** SRCH-7: a message a later one of yours superseded says what is current now; the current
 * one says what it was. Each links to the other message where it was said. */
function versions(hit) {
  const quote = (v) => {
    const text = `“${v.text.length > 200 ? `${v.text.slice(0, 200)}…` : v.text}”`;
    return v.conversationId
      ? h('a', { href: `#/c/${encodeURIComponent(v.conversationId)}?alt=${encodeURIComponent(v.id)}` }, text)
      : text;
  };
  if (hit.supersededBy) return h('p.superseded-by.muted', 'Now: ', quote(hit.supersededBy));
  if (hit.supersedes) {
    return h('p.was.muted', { title: 'Ranked at least as high as the message it replaces' },
      'Was: ', quote(hit.supersedes));
  }
  return null;
}

function hitItem(hit) {
  const title = hit.kind === 'entity'
    ? h('a', { href: `#/entities/${encodeURIComponent(hit.id)}` }, hit.name || hit.id)
    : null;
  const others = hit.kind === 'entity' || hit.kind === 'fact' ? hit.sources.slice(1) : [];
  return h(hit.supersededBy ? 'li.hit.superseded' : 'li.hit', { dataset: { kind: hit.kind, id: hit.id } },
    h('div', badge(KIND_NAME[hit.kind] || hit.kind), ' ', title, ' ', foundBy(hit),
      hit.supersededBy
        ? [' ', badge('changed later', 'A later message of yours says this changed: shown as history')]
        : null,
      hit.indexed === false
        ? [' ', badge('not yet indexed', 'Just added: only its words find it until it is indexed for meaning')]
        : null,
      h('span.muted', ` score ${hit.score.toFixed(3)}`,
        hit.similarity !== undefined ? ` · meaning ${hit.similarity.toFixed(2)}` : '')),
    hit.text ? h('p.hit-text', hit.text.slice(0, 400)) : null,
    versions(hit),
    h('p.muted', origin(hit), hit.createdAt ? [' · ', when(hit.createdAt)] : null,
      others.length ? [' · also in ', others.map((s, i) => [i ? ', ' : '', origin(s)])] : null));
}

/** The answer's hits, or why there are none. */
function results(answer) {
  const fresh = answer.hits.some((x) => x.indexed === false);
  return [
    answer.warning ? h('p.muted', { role: 'status' }, 'Searched by words only: meaning is not available right now.') : null,
    fresh ? h('p#not-indexed-note.muted', 'Items marked “not yet indexed” were added moments ago: until they are indexed, only their words find them.') : null,
    answer.hits.length
      ? h('ol#hits.hits', answer.hits.map(hitItem))
      : h('p#no-hits', 'Nothing close enough found. Try other words: the search understands meaning, so a question works too.'),
  ];
}

// The form stays put while a search runs: a new search replaces only the results below it,
// so the box keeps its text and focus. The address follows (`#/search?q=&kind=`) without
// reloading the page.
export async function searchPage(view) {
  const p = params();
  const q = p.get('q') || '';
  const kind = p.get('kind') || '';
  const input = h('input#search-q', { type: 'search', value: q, placeholder: 'What are you looking for?', required: true });
  const select = h('select#search-kind', ['', ...KINDS]
    .map((k) => h('option', { value: k, selected: k === kind }, k ? KIND_NAME[k] : 'Everything')));
  const out = h('div#search-results', { 'aria-live': 'polite' });
  let latest = 0;
  async function run(text, only) {
    const mine = ++latest;
    const query = new URLSearchParams({ q: text, limit: '20' });
    if (only) query.set('kinds', only);
    out.setAttribute('aria-busy', 'true');
    out.classList.add('searching');
    // The last results stay (dimmed) under the note until the new ones arrive.
    out.querySelector('#searching')?.remove();
    out.prepend(h('p#searching.muted', { role: 'status' }, 'Searching…'));
    try {
      const answer = await get(`/v1/search?${query}`);
      if (mine === latest) mount(out, results(answer));
    } catch (err) {
      if (mine === latest) mount(out, h('p.error', { role: 'alert' }, `The search failed: ${explain(err)}`));
    } finally {
      if (mine === latest) {
        out.removeAttribute('aria-busy');
        out.classList.remove('searching');
      }
    }
  }
  const form = h('form#search', {
    role: 'search',
    onsubmit: (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      const next = new URLSearchParams({ q: text });
      if (select.value) next.set('kind', select.value);
      const hash = `#/search?${next}`;
      // pushState fires no hashchange: the page is not rebuilt, only the results.
      if (location.hash !== hash) history.pushState(null, '', hash);
      run(text, select.value);
    },
  }, h('label', { for: 'search-q' }, 'Search '), input, ' ', select, ' ', h('button', { type: 'submit' }, 'Search'));
  mount(view, h('h1', 'Search'), form, out);
  input.focus();
  if (!q) {
    mount(out, h('p.muted', 'Finds what you said, what you were answered and what was learnt from it, by meaning as well as by words. Only your own conversations are searched.'));
    return;
  }
  await run(q, kind);
}

export async function entityPage(view, uuid) {
  const page = await get(`/v1/entities/${encodeURIComponent(uuid)}/context`);
  const e = page.entity;
  const facets = Object.entries(e.facets || {});
  mount(view,
    h('p', h('a', { href: '#/search' }, 'Search')),
    h('h1#entity-name', e.name, e.category ? h('span.muted', ` ${e.category}`) : null),
    h('p.admin-links', neo4jLink(lineageQuery.entity(e.uuid || uuid))),
    e.summary ? h('p#entity-summary', e.summary) : h('p.muted', 'No summary yet.'),
    facets.length ? [h('h2', 'Facets'), h('dl.facets', facets.map(([k, vs]) => [h('dt', k), h('dd', Array.isArray(vs) ? vs.join(', ') : String(vs ?? ''))]))] : null,
    h('h2', 'Mentioned in'),
    page.mentions.length
      ? h('ul#mentions', page.mentions.map((m) => h('li', (m.text || '').slice(0, 200), ' ',
        h('span.muted', '— ', origin(m)))))
      : h('p.muted', 'No message of yours mentions it.'),
    h('h2', 'Facts'),
    page.facts.length
      ? h('ul#facts', page.facts.map((f) => h('li', f.fact || f.name, ' ',
        h('a.muted', { href: `#/entities/${encodeURIComponent(f.other.uuid)}` }, `(${f.other.name || f.other.uuid})`))))
      : h('p.muted', 'None known.'),
    h('h2', 'Related'),
    page.neighbours.length
      ? h('ul#neighbours', page.neighbours.map((n) => h('li', h('a', { href: `#/entities/${encodeURIComponent(n.uuid)}` }, n.name || n.uuid))))
      : h('p.muted', 'None known.'),
    h('p.muted', `Known since ${when(e.createdAt)} · ${e.sources.length} source${e.sources.length === 1 ? '' : 's'}`));
}
