// The run list (`#/runs`), as people read one in Temporal's UI: each run's status, Process,
// owner, the message it answered, start and duration, filtered by status, Process and (admins)
// owner, searched by id, and kept live: while the tab is visible the rows are fetched again
// every few seconds and replaced in place, so filters, focus and scroll stay where they were.

import { all, get, session } from './api.js';
import { badge, duration, h, mount, when } from './dom.js';
import { every, run as runStatus } from './statuses.js';

/** A run id's random tail: ids are UUIDv7, whose first characters are the time it was made,
 * the same for every run of a minute; the full id is the link's title. */
const shortId = (id) => id.slice(-8);

/** How often the list looks again while visible. */
const REFRESH_MS = 4000;
const PAGE = 50;
/** A run id in full (UUID): the search box opens it instead of filtering. */
const FULL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The filters as the address holds them, so a filtered list can be linked and reloaded. */
function filtersFrom(hash) {
  const p = new URLSearchParams(hash.split('?')[1] || '');
  return { status: p.get('status') || '', process: p.get('process') || '', owner: p.get('owner') || '', q: p.get('q') || '' };
}

function hashOf(f) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) p.set(k, v);
  return `#/runs${p.toString() ? `?${p}` : ''}`;
}

/** Where a run's answered message is: its conversation, scrolled to that Alternative. */
export const messageHref = (m, alt = m.alternativeId || m.answerId) => `#/c/${encodeURIComponent(m.conversationId)}?alt=${encodeURIComponent(alt)}`;

/** What started the run, in one cell: the message it answered, or the upkeep that started it. */
function origin(r) {
  if (r.message) {
    const text = (r.message.text || '').trim();
    return h('a.run-message', { href: messageHref(r.message), title: text }, text ? `“${text.length > 90 ? `${text.slice(0, 90)}…` : text}”` : 'its message');
  }
  if (r.trigger) return h('span.muted', `${r.trigger.kind} (memory upkeep)`);
  if (r.parentRunId) return h('a.muted', { href: `#/runs/${r.parentRunId}` }, 'a step of its parent run');
  return h('span.muted', 'started directly');
}

function row(r) {
  const owner = r.ownerName || r.ownerId;
  return h('tr', { dataset: { runId: r.id, status: r.status } },
    h('td', badge(r.status)),
    h('td', h('a.run-id', { href: `#/runs/${r.id}`, title: r.id }, h('code', shortId(r.id)))),
    h('td', h('a', { href: `#/processes/${r.processId}` }, r.processName || r.processId), h('span.muted', ` v${r.processVersion}`)),
    h('td.run-owner', owner),
    h('td.run-origin', origin(r)),
    h('td', { title: r.startedAt || r.createdAt }, when(r.startedAt || r.createdAt)),
    h('td.run-duration', r.durationMs === null || r.durationMs === undefined ? h('span.muted', 'not started') : duration(r.durationMs)));
}

/** The owner filter (admins): a name typed with suggestions from `GET /v1/users?q=`, however
 * many users there are; a name or id that matches one user narrows the list to their runs,
 * an empty box to anyone's. */
function ownerFilter(owner, ownerId, choose) {
  const choices = h('datalist#run-owner-choices');
  const box = h('input#run-owner', {
    type: 'search', list: 'run-owner-choices', value: owner?.name || ownerId, placeholder: 'anyone',
    autocomplete: 'off', 'aria-describedby': 'run-owner-said',
  });
  const said = h('span.muted#run-owner-said', { 'aria-live': 'polite' });
  const matching = async (text) => (await get(`/v1/users?q=${encodeURIComponent(text)}&limit=20`)).items;
  let seq = 0;
  box.addEventListener('input', async () => {
    const n = ++seq;
    const text = box.value.trim();
    const found = text ? await matching(text).catch(() => []) : [];
    if (n !== seq) return;
    mount(choices, found.map((u) => h('option', { value: u.name, label: u.id })));
  });
  // Enter chooses the owner typed; it does not submit the id search around it.
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); box.dispatchEvent(new Event('change')); }
  });
  box.addEventListener('change', async () => {
    const text = box.value.trim();
    if (!text) { choose(''); return; }
    const found = await matching(text).catch(() => []);
    const exact = found.filter((u) => u.name === text || u.id === text);
    const one = exact.length === 1 ? exact[0] : found.length === 1 ? found[0] : null;
    if (one) choose(one.id);
    else mount(said, found.length ? ` ${found.length}${found.length === 20 ? '+' : ''} users match: pick one` : ' no user matches');
  });
  return h('label.filter', { for: 'run-owner' }, 'Owner ', box, choices, said);
}

export async function runList(view) {
  const f = filtersFrom(location.hash);
  const admin = session.me?.role === 'admin';
  const go = (change) => { location.hash = hashOf({ ...f, ...change }); };
  const [processes, owner] = await Promise.all([
    all('/v1/processes').catch(() => []),
    admin && f.owner ? get(`/v1/users/${encodeURIComponent(f.owner)}`).catch(() => null) : Promise.resolve(null),
  ]);
  const select = (id, label, value, options, key) => h('label.filter', { for: id }, `${label} `,
    h(`select#${id}`, { onchange: (e) => go({ [key]: e.target.value }) },
      options.map(([v, text]) => h('option', { value: v, selected: v === value }, text))));
  const search = h('input#run-search', {
    type: 'search', value: f.q, placeholder: 'Run id or its first characters', 'aria-label': 'Find a run by id', autocomplete: 'off',
    // What the API takes (an id's hex digits and dashes, at least four), so a typo is caught here.
    pattern: '[0-9a-fA-F\\-]{4,}', title: 'A run id, or at least its first four characters',
  });
  const form = h('form.inline.run-filters', {
    role: 'search',
    onsubmit: (e) => {
      e.preventDefault();
      const q = search.value.trim();
      // A whole id opens the run; a part of one narrows the list to ids that start with it.
      if (FULL_ID.test(q)) location.hash = `#/runs/${q.toLowerCase()}`;
      else go({ q });
    },
  },
  select('run-status', 'Status', f.status, ['', ...every(runStatus)].map((s) => [s, s || 'any']), 'status'),
  select('run-process', 'Process', f.process, [['', 'any'], ...processes.map((p) => [p.id, p.name || p.id])], 'process'),
  admin ? ownerFilter(owner, f.owner, (id) => go({ owner: id })) : null,
  search, h('button', { type: 'submit' }, 'Find'));

  const body = h('tbody');
  const status = h('p.muted.run-live', { role: 'status' });
  const more = h('button#runs-more', { type: 'button', hidden: true }, 'Older runs');
  let shown = PAGE;
  let cursor = null;
  let seq = 0;

  const query = (limit, after) => {
    const q = new URLSearchParams({ limit: String(limit) });
    if (f.status) q.set('status', f.status);
    if (f.process) q.set('processId', f.process);
    if (f.owner) q.set('ownerId', f.owner);
    if (f.q) q.set('idPrefix', f.q);
    if (after) q.set('cursor', after);
    return `/v1/runs?${q}`;
  };

  /** Draws the newest `shown` runs again; a slower answer than a newer request's is dropped. */
  async function refresh() {
    const n = ++seq;
    const page = await get(query(Math.min(shown, 500)));
    if (n !== seq) return;
    mount(body, page.items.length ? page.items.map(row) : h('tr', h('td', { colspan: 7 }, 'No run matches.')));
    cursor = page.nextCursor;
    more.hidden = !cursor || shown >= 500;
    mount(status, `Live · updated ${new Date().toLocaleTimeString()}`);
  }
  more.addEventListener('click', async () => {
    const page = await get(query(PAGE, cursor));
    body.append(...page.items.map(row));
    shown += page.items.length;
    cursor = page.nextCursor;
    more.hidden = !cursor || shown >= 500;
  });

  const ownerName = owner?.name;
  mount(view,
    h('h1', 'Runs',
      f.process ? h('span.muted', ` of ${processes.find((p) => p.id === f.process)?.name || f.process}`) : null,
      f.owner ? h('span.muted#runs-owner', ` started by ${ownerName || f.owner}`) : null),
    form,
    h('div.table-wrap', h('table.runs',
      h('caption', 'Newest first'),
      h('thead', h('tr', ['Status', 'Run', 'Process', 'Owner', 'Message', 'Started', 'Duration'].map((x) => h('th', { scope: 'col' }, x)))),
      body)),
    more, status);
  await refresh();

  // Live: every few seconds while the tab is visible, at once when it becomes visible again.
  const timer = setInterval(() => { if (document.visibilityState === 'visible') refresh().catch(() => mount(status, 'Live updates paused: the API did not answer.')); }, REFRESH_MS);
  const onVisible = () => { if (document.visibilityState === 'visible') refresh().catch(() => {}); };
  document.addEventListener('visibilitychange', onVisible);
  view.addEventListener('console:leave', () => { clearInterval(timer); document.removeEventListener('visibilitychange', onVisible); }, { once: true });
}
