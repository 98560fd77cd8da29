// Runs: the list, and one run with its Process version's DAG whose steps fill in live from the
// run's SSE stream, each step's attempts, worker, telemetry, output and error, and cancel.

import { get, post, runEvents } from './api.js';
import { drawDag } from './dag.js';
import { badge, h, json, mount, table, when } from './dom.js';

const TERMINAL = ['completed', 'failed', 'canceled'];

export async function runList(view) {
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  const status = params.get('status') || '';
  const process = params.get('process') || '';
  const query = new URLSearchParams({ limit: '100' });
  if (status) query.set('status', status);
  if (process) query.set('processId', process);
  const page = await get(`/v1/runs?${query}`);
  const filter = h('select#run-status', {
    onchange: (e) => {
      const next = new URLSearchParams();
      if (e.target.value) next.set('status', e.target.value);
      if (process) next.set('process', process);
      location.hash = `#/runs${next.toString() ? `?${next}` : ''}`;
    },
  }, ['', 'queued', 'running', 'waiting_for_approval', 'completed', 'failed', 'canceled']
    .map((s) => h('option', { value: s, selected: s === status }, s || 'any')));
  mount(view,
    h('h1', 'Runs', process ? h('span.muted', ` of ${process}`) : null),
    h('p', h('label', { for: 'run-status' }, 'Status '), filter),
    table(['Run', 'Process', 'Status', 'Depth', 'Created', 'Finished'], page.items.map((r) => [
      h('a', { href: `#/runs/${r.id}` }, r.id),
      h('a', { href: `#/processes/${r.processId}` }, `${r.processId} v${r.processVersion}`),
      badge(r.status), String(r.depth), when(r.createdAt), when(r.finishedAt),
    ]), 'Newest first'));
}

async function versionOf(processId, number) {
  const page = await get(`/v1/processes/${processId}/versions?limit=500`);
  return page.items.find((v) => v.version === number) || null;
}

export async function runPage(view, id, { showError }) {
  const stop = new AbortController();
  let pending = null;
  view.addEventListener('console:leave', () => { stop.abort(); clearTimeout(pending); }, { once: true });
  let run = await get(`/v1/runs/${id}`);
  const version = await versionOf(run.processId, run.processVersion).catch(() => null);
  // An agent's model turns and tool calls are step runs `<step>#…`: not steps of the version.
  const steps = version?.steps || run.steps.filter((s) => !s.stepId.includes('#')).map((s) => ({ id: s.stepId }));
  let selected = null;
  let seq = 0;

  function stepDetail(s) {
    if (!s) return h('p.muted', 'Choose a step to see its attempts, worker, telemetry, output and error.');
    return h('section.step-detail', { 'aria-label': `Step ${s.stepId}` },
      h('h2', `Step ${s.stepId} `, badge(s.status)),
      h('dl',
        h('dt', 'Attempts'), h('dd', String(s.attempts)),
        h('dt', 'Worker'), h('dd', s.workerId || '—'),
        h('dt', 'Started'), h('dd', when(s.startedAt)),
        h('dt', 'Finished'), h('dd', when(s.finishedAt)),
        s.childRunId ? [h('dt', 'Child run'), h('dd', h('a', { href: `#/runs/${s.childRunId}` }, s.childRunId))] : null),
      h('h3', 'Output'), json(s.output),
      s.error ? [h('h3', 'Error'), json(s.error)] : null,
      h('h3', 'Telemetry'), json(s.telemetry));
  }

  function render() {
    const byStep = new Map(run.steps.map((s) => [s.stepId, s]));
    const done = TERMINAL.includes(run.status);
    mount(view,
      h('h1', 'Run ', h('code', run.id), ' ', badge(run.status)),
      h('p', 'Process ', h('a', { href: `#/processes/${run.processId}` }, run.processId), ` version ${run.processVersion}`,
        run.parentRunId ? [' · child of ', h('a', { href: `#/runs/${run.parentRunId}` }, 'its parent run')] : null,
        ` · created ${when(run.createdAt)}`, run.finishedAt ? ` · finished ${when(run.finishedAt)}` : ''),
      done ? null : h('button.cancel', {
        type: 'button',
        onclick: async () => {
          try { await post(`/v1/runs/${id}/cancel`); } catch (err) { showError(err); }
        },
      }, 'Cancel run'),
      drawDag(steps, (sid) => byStep.get(sid)?.status, (sid) => { selected = sid; render(); }, (sid) => {
        // An agent step's model turns and tool calls are step runs `<step>#…` of their own.
        const calls = run.steps.filter((x) => x.stepId.startsWith(`${sid}#`)).length;
        return calls ? `${calls} call${calls > 1 ? 's' : ''}` : '';
      }),
      table(['Step', 'Status', 'Attempts', 'Worker', 'Finished'], run.steps.map((s) => [
        h('button.linkish', { type: 'button', onclick: () => { selected = s.stepId; render(); } }, s.stepId),
        badge(s.status), String(s.attempts), s.workerId || '—', when(s.finishedAt),
      ]), 'Steps'),
      stepDetail(byStep.get(selected)),
      h('h2', 'Output'), json(run.output),
      run.error ? [h('h2', 'Error'), json(run.error)] : null);
  }

  async function refresh() {
    const n = ++seq;
    try {
      const next = await get(`/v1/runs/${id}`);
      if (n !== seq || stop.signal.aborted) return;
      run = next;
      const focused = document.activeElement?.closest?.('[data-step]')?.dataset.step;
      render();
      if (focused) view.querySelector(`[data-step="${focused}"]`)?.focus();
    } catch (err) { if (!stop.signal.aborted) showError(err); }
  }

  render();
  if (!TERMINAL.includes(run.status)) {
    runEvents(id, (kind) => {
      if (kind === 'step.delta') return;
      clearTimeout(pending);
      pending = setTimeout(refresh, 50);
    }, stop.signal).catch((err) => {
      if (err.name !== 'AbortError') showError(new Error(`Live updates stopped (${err.message}); reload the page to resume.`));
    }).finally(() => { if (!stop.signal.aborted) refresh(); });
  }
}
