// Read-only catalog pages: Processes (versions, a version's DAG and JSON), Tools, Services
// (health) and Workers. Each shows what the API lets the signed-in caller see (OWN-2).

import { all, get, post, session } from './api.js';
import { drawDag } from './dag.js';
import { badge, h, json, mount, table, when } from './dom.js';

const yes = (b) => (b ? 'yes' : 'no');

export async function processList(view) {
  const items = await all('/v1/processes');
  mount(view, h('h1', 'Processes'),
    table(['Process', 'Name', 'Version', 'Steps', 'Enabled', 'Shared', 'Owner'], items.map((p) => [
      h('a', { href: `#/processes/${p.id}` }, p.id), p.name, String(p.version), String(p.steps.length),
      yes(p.enabled), yes(p.shared), p.ownerId,
    ])));
}

export async function processPage(view, id) {
  const [process, versions] = await Promise.all([get(`/v1/processes/${id}`), all(`/v1/processes/${id}/versions`)]);
  versions.sort((a, b) => b.version - a.version);
  const wanted = Number(new URLSearchParams(location.hash.split('?')[1] || '').get('version')) || process.version;
  const version = versions.find((v) => v.version === wanted) || versions[0];
  mount(view,
    h('h1', process.name, ' ', h('span.muted', process.id)),
    h('p', `Current version ${process.version} · `, process.enabled ? 'enabled' : badge('disabled'),
      ` · ${process.shared ? 'shared' : 'private'} · owner ${process.ownerId}`),
    h('p', h('a', { href: `#/runs?process=${id}` }, 'Runs of this Process')),
    h('nav.versions-list', { 'aria-label': 'Versions' }, h('h2', 'Versions'),
      h('ul', versions.map((v) => h('li', v.version === version?.version ? h('strong', `v${v.version}`)
        : h('a', { href: `#/processes/${id}?version=${v.version}` }, `v${v.version}`), h('span.muted', ` ${when(v.createdAt)}`))))),
    version ? [h('h2', `Version ${version.version}`), drawDag(version.steps || []),
      h('details', h('summary', 'Definition (JSON)'), json(version))] : h('p', 'No versions.'));
}

/** The Tools a page at a time (50, by id): a big catalogue opens as fast as a small one. */
export async function toolList(view) {
  const cells = (t) => [t.id, t.name, t.serviceId, t.operation?.type || '—', badge(t.status), yes(t.enabled), yes(t.shared)];
  const first = await get('/v1/tools?limit=50');
  const more = h('button#tools-more', { type: 'button', hidden: !first.nextCursor }, 'More tools');
  let cursor = first.nextCursor;
  const drawn = table(['Tool', 'Name', 'Service', 'Operation', 'Status', 'Enabled', 'Shared'], first.items.map(cells));
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const page = await get(`/v1/tools?limit=50&cursor=${encodeURIComponent(cursor)}`);
      const body = drawn.querySelector('tbody');
      if (page.items.length) body.append(...table([], page.items.map(cells)).querySelectorAll('tbody tr'));
      cursor = page.nextCursor;
      more.hidden = !cursor;
    } finally { more.disabled = false; }
  });
  mount(view, h('h1', 'Tools'), drawn, more);
}

export async function serviceList(view, { showError } = {}) {
  const items = await all('/v1/services');
  const me = session.me;
  // Owners and admins can probe a Service now (POST /v1/services/{id}/health-check).
  const checkNow = (s) => (me && (me.role === 'admin' || s.ownerId === me.id)
    ? h('button.check-now', {
      type: 'button',
      onclick: async (e) => {
        e.currentTarget.disabled = true;
        try { await post(`/v1/services/${s.id}/health-check`); } catch (err) { showError?.(err); }
        await serviceList(view, { showError });
      },
    }, 'Check now') : null);
  mount(view, h('h1', 'Services'),
    table(['Service', 'Name', 'Type', 'Health', 'Last check', 'Error', 'Enabled', ''], items.map((s) => [
      s.id, s.name, s.type, badge(s.status), when(s.lastHealthCheck), s.errorMessage || '—', yes(s.enabled), checkNow(s),
    ])));
}

export async function workerList(view) {
  const { items } = await get('/v1/workers');
  // Grouped by pool (one process serving one type: the id without its slot number).
  const pools = new Map();
  for (const w of items) {
    const pool = w.id.replace(/-\d+$/, '');
    if (!pools.has(pool)) pools.set(pool, []);
    pools.get(pool).push(w);
  }
  const sorted = [...pools.entries()].sort(([a, x], [b, y]) => x[0].type.localeCompare(y[0].type) || a.localeCompare(b));
  const summary = (slots) => {
    const online = slots.filter((w) => w.status !== 'offline');
    return online.length ? `${online.filter((w) => w.status === 'busy').length} busy of ${online.length}` : 'offline';
  };
  mount(view, h('h1', 'Workers'),
    h('p.muted', 'One row per pool: a worker process serving one operation type. Open a pool for its slots.'),
    h('ul.cards.pools', sorted.map(([pool, slots]) => {
      const sum = (k) => String(slots.reduce((n, w) => n + (w[k] ?? 0), 0));
      const last = slots.map((w) => w.lastHeartbeat).filter(Boolean).sort().pop();
      return h('li.pool', { dataset: { type: slots[0].type } },
        h('details',
          h('summary', h('strong', slots[0].type), ' ', badge(slots.every((w) => w.status === 'offline') ? 'offline' : 'online'),
            h('span.muted', ` ${pool} · ${summary(slots)} · processed ${sum('processedCount')} · errors ${sum('errorCount')} · last heartbeat ${when(last)}`)),
          table(['Worker', 'Status', 'Current job', 'Last heartbeat', 'Processed', 'Errors'], slots.map((w) => [
            w.id, badge(w.status), w.currentJobId || '—', when(w.lastHeartbeat),
            String(w.processedCount ?? 0), String(w.errorCount ?? 0),
          ]))));
    })));
}
