// One run with its Process version's DAG whose steps fill in live from the run's SSE stream,
// its waterfall (waterfall.js), each step's attempts, worker, telemetry, output and error, and
// cancel; a settled run's forks (lineage.js) and the playback of its event log (dag.js); and two
// runs side by side (a fork and its original). The list of runs is runlist.js.

import { all, get, post, runEvents } from './api.js';
import { drawDag, playback } from './dag.js';
import { forkButton, forkLineage, lineage, reusedLabel } from './lineage.js';
import { badge, duration, h, json, mount, table, when } from './dom.js';
import { lineageQuery, neo4jLink } from './neo4j.js';
import { messageHref } from './runlist.js';
import { run as runStatus, step as stepStatus } from './statuses.js';
import { limitFlag, limitHit, waterfall } from './waterfall.js';

const settled = (status) => [runStatus.completed, runStatus.failed, runStatus.canceled].includes(status);

export async function versionOf(processId, number) {
  const page = await get(`/v1/processes/${processId}/versions?limit=500`);
  return page.items.find((v) => v.version === number) || null;
}

export async function runPage(view, id, { showError }) {
  const stop = new AbortController();
  let pending = null;
  let player = null;
  view.addEventListener('console:leave', () => { stop.abort(); clearTimeout(pending); player?.stop(); }, { once: true });
  let run = await get(`/v1/runs/${id}`);
  const version = await versionOf(run.processId, run.processVersion).catch(() => null);
  // The run's line in the list names its Process, owner and answered message (the whole id is
  // a prefix of itself); a run the list cannot show is drawn without them.
  let summary = (await get(`/v1/runs?limit=1&idPrefix=${encodeURIComponent(id)}`).catch(() => null))?.items?.[0] || null;
  let waterfallRow = null;
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
  /** A step, or an agent's call as "<step> · Model turn 1", for the playback's events. */
  const label = (sid) => {
    if (!sid.includes('#')) return sid;
    return `${sid.split('#')[0]} · ${callTitle(run.steps.find((x) => x.stepId === sid) || { stepId: sid })}`;
  };
  // Drawn once and kept across the redraws below, so the scrubber keeps its place and focus.
  player = playback(steps, label);
  const content = h('div.run-content');

  // The call's id says what it is (`#r1` the intent router, `#m1` a model turn, `#t1` a tool
  // call); `kind` is `model` for the router too, since both ask the model.
  // Calls are numbered across kinds (`#r1`, `#m2`, `#t3`), so a model turn or tool call is
  // named by its place among its own kind: the first model turn after the router is turn 1.
  function callTitle(c) {
    const [sid, n = ''] = c.stepId.split('#');
    const nth = () => {
      const same = callsOf(sid).map((x) => x.stepId.split('#')[1] || '').filter((x) => x[0] === n[0])
        .map((x) => Number(x.slice(1))).sort((a, b) => a - b);
      return same.indexOf(Number(n.slice(1))) + 1 || n.slice(1);
    };
    if (n.startsWith('r')) return 'Intent router';
    if (n.startsWith('m')) return `Model turn ${nth()}`;
    if (n.startsWith('t')) return `Tool call ${nth()}: ${toolNames.get(c.toolId) || c.toolId || 'a tool'}`;
    return c.kind === 'router' ? 'Intent router' : `Call ${n}`;
  }

  /** The waterfall's rows: each step, and under an agent step its calls in the order they ran. */
  function waterfallRows() {
    const t = (x) => x.queuedAt || x.startedAt || x.finishedAt || '9';
    return steps.flatMap((st) => {
      const s = run.steps.find((x) => x.stepId === st.id);
      if (!s) return [];
      const calls = [...callsOf(st.id)].sort((a, b) => t(a).localeCompare(t(b)));
      return [{ id: s.stepId, label: s.stepId, step: s, depth: 0 },
        ...calls.map((c) => ({ id: c.stepId, label: callTitle(c), step: c, depth: 1 }))];
    });
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
      h('h2', `Step ${s.stepId} `, badge(s.status), ' ', limitFlag(s)),
      h('dl',
        s.reusedFrom ? [h('dt', 'Reused'), h('dd', reusedLabel(s), ' (nothing was called: the output is the original\'s)')] : null,
        h('dt', 'Attempts'), h('dd', String(s.attempts)),
        h('dt', 'Worker'), h('dd', s.workerId || '—'),
        h('dt', 'Started'), h('dd', when(s.startedAt)),
        h('dt', 'Finished'), h('dd', when(s.finishedAt)),
        s.childRunId ? [h('dt', 'Child run'), h('dd', h('a', { href: `#/runs/${s.childRunId}` }, s.childRunId))] : null),
      h('h3', 'Output'), json(s.output),
      s.error ? [h('h3', 'Error'), json(s.error)] : null,
      h('h3', 'Telemetry'), json(s.telemetry),
      // Only a settled top-level run can be forked (FORK-2); an agent's call is not a step.
      settled(run.status) && run.depth === 1 && !s.stepId.includes('#') ? forkButton(run, s.stepId) : null);
  }

  /** The message this run answered, linked to that exact Alternative in its conversation. */
  function asked() {
    const m = summary?.message;
    if (m) {
      const text = (m.text || '').trim();
      return h('p.asked', 'Answered ',
        h('a.message-link', { href: messageHref(m), title: text }, text ? `“${text.length > 140 ? `${text.slice(0, 140)}…` : text}”` : 'a message'),
        ' · ', h('a.answer-link', { href: messageHref(m, m.answerId) }, 'its answer'),
        ' in ', h('a.turn-link', { href: `#/c/${encodeURIComponent(m.conversationId)}` }, 'its conversation'));
    }
    if (!run.inputs?.conversationId) return null;
    const alt = run.alternativeId || run.inputs.alternativeId;
    return h('p.asked', 'Asked for by ', h('a.turn-link', {
      href: alt ? messageHref({ conversationId: run.inputs.conversationId }, alt) : `#/c/${run.inputs.conversationId}`,
    }, 'a turn of its conversation'));
  }

  function render() {
    const byStep = new Map(run.steps.map((s) => [s.stepId, s]));
    const done = settled(run.status);
    mount(content,
      h('h1', 'Run ', h('code', run.id), ' ', badge(run.status)),
      forkLineage(run),
      asked(),
      h('p', 'Process ', h('a', { href: `#/processes/${run.processId}` }, summary?.processName || run.processId), ` version ${run.processVersion}`,
        summary?.ownerName ? ` · started by ${summary.ownerName}` : '',
        run.parentRunId ? [' · child of ', h('a', { href: `#/runs/${run.parentRunId}` }, 'its parent run')] : null,
        ` · created ${when(run.createdAt)}`, run.finishedAt ? ` · finished ${when(run.finishedAt)}` : '',
        run.startedAt ? h('span.run-took', ` · ${done ? 'took' : 'running for'} ${duration((run.finishedAt ? new Date(run.finishedAt) : new Date()) - new Date(run.startedAt))}`) : ''),
      h('p.admin-links', neo4jLink(lineageQuery.run(run.id))),
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
        const reused = byStep.get(sid)?.reusedFrom ? 'reused' : '';
        return [reused, calls ? `${calls} call${calls > 1 ? 's' : ''}${failed ? `, ${failed} failed` : ''}` : '',
          limitHit(byStep.get(sid)) ? `⚑ ${limitHit(byStep.get(sid))}` : ''].filter(Boolean).join(', ');
      }, (sid) => [byStep.get(sid)?.reusedFrom ? 'reused' : '', limitHit(byStep.get(sid)) ? 'hit-limit' : ''].filter(Boolean).join(' ')),
      waterfall(run, waterfallRows(), { selected: waterfallRow, onSelect: (row) => { waterfallRow = row; render(); } }),
      steps.map((s) => timeline(s.id)),
      // A reused step is dimmed: it took the original's output, and nothing ran for it here.
      table(['Step', 'Status', 'Attempts', 'Worker', 'Finished'], run.steps.filter((s) => !s.stepId.includes('#')).map((s) => ({
        className: s.reusedFrom ? 'reused' : null,
        cells: [
          h('button.linkish', { type: 'button', onclick: () => { selected = s.stepId; render(); } }, s.stepId),
          [badge(s.status), ' ', reusedLabel(s), ' ', limitFlag(s)], String(s.attempts), s.workerId || '—', when(s.finishedAt),
        ],
      })), 'Steps'),
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
      if (focused) content.querySelector(`[data-step="${focused}"]`)?.focus();
    } catch (err) { if (!stop.signal.aborted) showError(err); }
  }

  mount(view, content, player.el);
  render();
  drawLineage();
  // One stream, read from the start of the log: the playback gets every event, and a run still
  // going is redrawn as its events come. A settled run's stream ends after its catch-up.
  const live = !settled(run.status);
  runEvents(id, (kind, data) => {
    if (kind === 'step.delta') return;
    player.add(data);
    if (!live) return;
    clearTimeout(pending);
    pending = setTimeout(refresh, 50);
  }, stop.signal).then(() => player.done(), (err) => {
    if (err.name !== 'AbortError') showError(new Error(`Live updates stopped (${err.message}); reload the page to resume.`));
  }).finally(() => { if (live && !stop.signal.aborted) refresh(); });
}

// ---- Two runs side by side (`#/runs/<a>/diff/<b>`, GET /v1/runs/{a}/diff/{b}): each run's DAG with
// its steps marked by verdict, then one row per step with its verdict and, where the two differ,
// their inputs and outputs next to each other.

/** Verdicts the server gives (StepVerdict); the last four are the ones that mark a change. */
const CHANGED = new Set(['input_changed', 'output_changed', 'only_in_a', 'only_in_b']);
const SAYS = {
  same: 'same input, same output',
  reused: 'took the other run\'s recorded output',
  input_changed: 'another input',
  output_changed: 'same input, another outcome',
  only_in_a: 'only in A',
  only_in_b: 'only in B',
};

/** The steps one side's DAG draws: its version's, else the steps the diff names on that side. */
function stepsOf(version, diff, side) {
  if (version?.steps?.length) return version.steps;
  return diff.steps.filter((s) => s[side] && !s.stepId.includes('#')).map((s) => ({ id: s.stepId }));
}

function sideDag(title, run, version, diff, side) {
  const byStep = new Map(diff.steps.map((s) => [s.stepId, s]));
  return h(`div.diff-side.side-${side}`,
    h('h2', title, ' ', h('a', { href: `#/runs/${run.id}` }, h('code', run.id.slice(0, 13))),
      ` · version ${run.processVersion} `, badge(run.status)),
    drawDag(stepsOf(version, diff, side),
      (sid) => byStep.get(sid)?.[side]?.status,
      null,
      (sid) => byStep.get(sid)?.verdict?.replace(/_/g, ' ') || '',
      (sid) => {
        const v = byStep.get(sid)?.verdict;
        return v ? `v-${v}${CHANGED.has(v) ? ' changed' : ''}` : '';
      }));
}

/** Input and output of the two sides next to each other, for a changed step. */
function sideBySide(row) {
  const part = (name) => h('div.diff-pair',
    h('div', h('h3', `A's ${name}`), row.a ? json(row.a[name]) : h('p.muted', 'Not in A.')),
    h('div', h('h3', `B's ${name}`), row.b ? json(row.b[name]) : h('p.muted', 'Not in B.')));
  return h('details.diff-detail', { open: true }, h('summary', 'Inputs and outputs'), part('input'), part('output'));
}

export async function diffPage(view, a, b) {
  const diff = await get(`/v1/runs/${a}/diff/${b}`);
  const [runA, runB] = await Promise.all([get(`/v1/runs/${a}`), get(`/v1/runs/${b}`)]);
  const [versionA, versionB] = await Promise.all([
    versionOf(runA.processId, runA.processVersion).catch(() => null),
    versionOf(runB.processId, runB.processVersion).catch(() => null),
  ]);
  const rows = diff.steps.map((row) => ({
    className: `diff-row v-${row.verdict}${CHANGED.has(row.verdict) ? ' changed' : ''}`,
    cells: [
      h('code', row.stepId),
      [badge(row.verdict), h('span.muted', ` ${SAYS[row.verdict] || ''}`)],
      row.a ? badge(row.a.status) : '—',
      row.b ? badge(row.b.status) : '—',
      CHANGED.has(row.verdict) ? sideBySide(row) : h('span.muted', 'no difference'),
    ],
  }));
  mount(view,
    h('h1', 'Compare two runs'),
    h('p.diff-summary',
      diff.differing ? `${diff.differing} ${diff.differing === 1 ? 'step differs' : 'steps differ'}` : 'No step differs',
      diff.bForkedFrom === a ? ' · B is a fork of A' : diff.bForkedFrom ? [' · B is a fork of ', h('a', { href: `#/runs/${diff.bForkedFrom}` }, 'another run')] : '',
      '.'),
    h('div.diff-dags', sideDag('A', runA, versionA, diff, 'a'), sideDag('B', runB, versionB, diff, 'b')),
    table(['Step', 'Verdict', 'A', 'B', 'Difference'], rows, 'Each step of the two runs'));
}
