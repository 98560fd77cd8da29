// Read-only catalog pages: Processes (versions, a version's DAG and JSON), Tools, Services
// (health) and Workers. Each shows what the API lets the signed-in caller see (OWN-2).

import { all, get } from './api.js';
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

export async function toolList(view) {
  const items = await all('/v1/tools');
  mount(view, h('h1', 'Tools'),
    table(['Tool', 'Name', 'Service', 'Operation', 'Status', 'Enabled', 'Shared'], items.map((t) => [
      t.id, t.name, t.serviceId, t.operation?.type || '—', badge(t.status), yes(t.enabled), yes(t.shared),
    ])));
}

export async function serviceList(view) {
  const items = await all('/v1/services');
  mount(view, h('h1', 'Services'),
    table(['Service', 'Name', 'Type', 'Health', 'Last check', 'Error', 'Enabled'], items.map((s) => [
      s.id, s.name, s.type, badge(s.status), when(s.lastHealthCheck), s.errorMessage || '—', yes(s.enabled),
    ])));
}

export async function workerList(view) {
  const { items } = await get('/v1/workers');
  items.sort((a, b) => a.type.localeCompare(b.type) || a.id.localeCompare(b.id));
  mount(view, h('h1', 'Workers'),
    table(['Worker', 'Type', 'Status', 'Current job', 'Last heartbeat', 'Processed', 'Errors'], items.map((w) => [
      w.id, w.type, badge(w.status), w.currentJobId || '—', when(w.lastHeartbeat),
      String(w.processedCount ?? 0), String(w.errorCount ?? 0),
    ])));
}
