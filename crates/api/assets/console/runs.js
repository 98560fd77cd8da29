// Runs: the list, and one run with its Process version's DAG whose steps fill in live from the
// run's SSE stream, each step's attempts, worker, telemetry, output and error, and cancel.

import { all, get, post, runEvents } from './api.js';
import { drawDag } from './dag.js';
import { lineage } from './lineage.js';
import { badge, h, json, mount, table, when } from './dom.js';
import { every, run as runStatus, step as stepStatus } from './statuses.js';

const settled = (status) => [runStatus.completed, runStatus.failed, runStatus.canceled].includes(status);

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
  }, ['', ...every(runStatus)]
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
  // The lineage is drawn once the run has settled (its Tools and Workers are known then).
  const lineageSlot = h('div.lineage-slot');
  const drawLineage = () => lineage(run, version).then((el) => mount(lineageSlot, el), () => {});
  const toolNames = new Map((await all('/v1/tools').catch(() => [])).map((t) => [t.id, t.name]));
  const callsOf = (sid) => run.steps.filter((x) => x.stepId.startsWith(`${sid}#`));
  const failedCalls = (sid) => callsOf(sid).filter((x) => x.status === stepStatus.failed).length;

  const millis = (s) => (s.startedAt && s.finishedAt ? new Date(s.finishedAt) - new Date(s.startedAt) : null);
  function callTitle(c) {
    const n = c.stepId.split('#')[1] || '';
    if (c.kind === 'model' || n.startsWith('m')) return `Model turn ${n.slice(1)}`;
    if (c.kind === 'router' || n.startsWith('r')) return 'Router';
    return `Tool call ${n.slice(1)}: ${toolNames.get(c.toolId) || c.toolId || 'a tool'}`;
  }

  /** An agent step's model turns and tool calls, in order, each its own node. */
  function timeline(sid) {
    const calls = callsOf(sid);
    if (!calls.length) return null;
    return h('section.timeline', { 'aria-label': `Timeline of ${sid}` },
      h('h2', `Timeline of ${sid}`),
      failedCalls(sid) ? h('p.note', badge(stepStatus.failed), ` ${failedCalls(sid)} call(s) failed inside this step; the model read the error and went on.`) : null,
      h('ol.calls', calls.map((c) => h(`li.call.k-${c.kind || 'call'}`, { dataset: { status: c.status, step: c.stepId } },
        h('div.call-head', h('strong', callTitle(c)), ' ', badge(c.status),
          h('span.muted', ` ${millis(c) ?? '…'} ms · ${c.attempts} attempt${c.attempts === 1 ? '' : 's'} · ${c.workerId || 'no worker yet'}`)),
        c.error ? h('p.note', json(c.error)) : null,
        h('details', h('summary', 'Input'), json(c.input)),
        h('details', h('summary', 'Output'), json(c.output))))));
  }

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
    const done = settled(run.status);
    mount(view,
      h('h1', 'Run ', h('code', run.id), ' ', badge(run.status)),
      run.inputs?.conversationId ? h('p.asked', 'Asked for by ',
        h('a.turn-link', { href: `#/c/${run.inputs.conversationId}` }, 'a turn of its conversation')) : null,
      h('p', 'Process ', h('a', { href: `#/processes/${run.processId}` }, run.processId), ` version ${run.processVersion}`,
        run.parentRunId ? [' · child of ', h('a', { href: `#/runs/${run.parentRunId}` }, 'its parent run')] : null,
        ` · created ${when(run.createdAt)}`, run.finishedAt ? ` · finished ${when(run.finishedAt)}` : ''),
      done ? null : h('button.cancel', {
        type: 'button',
        onclick: async () => {
          try { await post(`/v1/runs/${id}/cancel`); } catch (err) { showError(err); }
        },
      }, 'Cancel run'),
      // A step that completed with a failed call inside is flagged, not green.
      drawDag(steps, (sid) => {
        const st = byStep.get(sid)?.status;
        return st === stepStatus.completed && failedCalls(sid) ? 'completed_with_failures' : st;
      }, (sid) => { selected = sid; render(); }, (sid) => {
        // An agent step's model turns and tool calls are step runs `<step>#…` of their own.
        const calls = callsOf(sid).length;
        const failed = failedCalls(sid);
        return calls ? `${calls} call${calls > 1 ? 's' : ''}${failed ? `, ${failed} failed` : ''}` : '';
      }),
      steps.map((s) => timeline(s.id)),
      table(['Step', 'Status', 'Attempts', 'Worker', 'Finished'], run.steps.filter((s) => !s.stepId.includes('#')).map((s) => [
        h('button.linkish', { type: 'button', onclick: () => { selected = s.stepId; render(); } }, s.stepId),
        badge(s.status), String(s.attempts), s.workerId || '—', when(s.finishedAt),
      ]), 'Steps'),
      stepDetail(byStep.get(selected)),
      lineageSlot,
      h('h2', 'Output'), json(run.output),
      run.error ? [h('h2', 'Error'), json(run.error)] : null);
  }

  async function refresh() {
    const n = ++seq;
    try {
      const next = await get(`/v1/runs/${id}`);
      if (n !== seq || stop.signal.aborted) return;
      run = next;
      if (settled(run.status)) drawLineage();
      const focused = document.activeElement?.closest?.('[data-step]')?.dataset.step;
      render();
      if (focused) view.querySelector(`[data-step="${focused}"]`)?.focus();
    } catch (err) { if (!stop.signal.aborted) showError(err); }
  }

  render();
  drawLineage();
  if (!settled(run.status)) {
    runEvents(id, (kind) => {
      if (kind === 'step.delta') return;
      clearTimeout(pending);
      pending = setTimeout(refresh, 50);
    }, stop.signal).catch((err) => {
      if (err.name !== 'AbortError') showError(new Error(`Live updates stopped (${err.message}); reload the page to resume.`));
    }).finally(() => { if (!stop.signal.aborted) refresh(); });
  }
}
