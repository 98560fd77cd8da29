// A run's waterfall: one bar per step, and under an agent step one per model turn and tool
// call, on a shared time axis from the run's creation. Each bar shows the queue wait (queued →
// started) apart from the work (started → finished), so time lost waiting for a worker is seen
// at a glance. A row is a button: choosing it (click, tap, Enter) shows its times in words.
// Bars are placed with `el.style` (CSSOM), which the console's CSP allows where a `style`
// attribute would not be.

import { duration, h } from './dom.js';

const at = (iso) => (iso ? new Date(iso).getTime() : null);

/** Why an agent step stopped early, in words; null when it finished on its own. The agent loop
 * records its reason as `finishReason` in the step's output and telemetry (AGT-7, AGT-11). */
const LIMITS = {
  iteration_limit: 'stopped at its model-turn limit',
  tool_call_limit: 'stopped at its tool-call limit',
  budget_exceeded: 'stopped at its token or spend budget',
  timeout: 'stopped at its time limit',
};

export function limitHit(step) {
  const reason = step?.output?.finishReason ?? step?.telemetry?.finishReason;
  if (!reason || reason === 'complete') return null;
  return LIMITS[reason] || `stopped early (${reason})`;
}

/** A visible flag for a step that hit a limit: a word, not only a colour. */
export function limitFlag(step) {
  const says = limitHit(step);
  return says ? h('span.limit-flag', { title: says }, `⚑ ${says}`) : null;
}

/** Five tick marks over `span` milliseconds. */
function axis(span) {
  return h('div.wf-axis', { 'aria-hidden': 'true' }, h('span.wf-label'), h('div.wf-track',
    [0, 0.25, 0.5, 0.75, 1].map((f) => {
      const tick = h('span.wf-tick', duration(Math.round(span * f)));
      tick.style.left = `${f * 100}%`;
      if (f === 1) tick.classList.add('end');
      return tick;
    })));
}

function segment(cls, from, to, origin, span) {
  const el = h(`span.${cls}`);
  el.style.left = `${((from - origin) / span) * 100}%`;
  // A bar too short to see still shows as a sliver.
  el.style.width = `max(2px, ${((to - from) / span) * 100}%)`;
  return el;
}

/** What a row says when chosen. */
function detail(row, origin) {
  const s = row.step;
  const q = at(s.queuedAt); const b = at(s.startedAt); const e = at(s.finishedAt);
  const when = (t) => (t === null ? '—' : `+${duration(t - origin)}`);
  return h('div.wf-detail', { role: 'status' },
    h('strong', row.label), ' ', h('span.muted', s.status),
    limitFlag(s) ? [' ', limitFlag(s)] : null,
    h('dl',
      h('dt', 'Queued'), h('dd', when(q)),
      h('dt', 'Started'), h('dd', when(b), q !== null && b !== null ? h('span.muted', ` (waited ${duration(b - q)})`) : null),
      h('dt', 'Finished'), h('dd', when(e), b !== null && e !== null ? h('span.muted', ` (ran ${duration(e - b)})`) : null),
      h('dt', 'Worker'), h('dd', s.workerId || '—'),
      h('dt', 'Attempts'), h('dd', String(s.attempts ?? '—'))));
}

/**
 * `rows`: [{ id, label, step, depth }] in display order (depth 1: an agent's call). `run` gives
 * the axis its start and, while running, its end is now. `selected` is the chosen row's id;
 * `onSelect(id)` is called with a row's id (or null to close its details).
 */
export function waterfall(run, rows, { selected = null, onSelect = () => {} } = {}) {
  const times = rows.flatMap((r) => [at(r.step.queuedAt), at(r.step.startedAt), at(r.step.finishedAt)]).filter((t) => t !== null);
  const origin = Math.min(at(run.createdAt) ?? Infinity, ...times);
  const end = run.finishedAt ? Math.max(at(run.finishedAt), ...times) : Math.max(Date.now(), ...times);
  if (!Number.isFinite(origin) || !rows.length) return h('p.muted.waterfall-empty', 'No step has been queued yet.');
  const span = Math.max(1, end - origin);
  const now = Date.now();
  const chosen = rows.find((r) => r.id === selected);
  return h('section.waterfall', { 'aria-label': 'Waterfall' },
    h('h2', 'Waterfall'),
    h('p.wf-legend.muted', h('span.wf-key.wf-queue'), ' waiting in the queue ', h('span.wf-key.wf-run'), ' running or done ',
      `· ${duration(span)} in all`),
    axis(span),
    h('ol.wf-rows', rows.map((r) => {
      const s = r.step;
      const q = at(s.queuedAt); const b = at(s.startedAt); const e = at(s.finishedAt);
      const track = h('div.wf-track');
      // The wait: from queued to started (or to now, while still waiting).
      if (q !== null && (b ?? (e === null ? now : e)) > q) track.append(segment('wf-queue', q, b ?? e ?? now, origin, span));
      if (b !== null) track.append(segment(`wf-run.s-${s.status}`, b, e ?? now, origin, span));
      const flag = limitHit(s);
      const said = [s.status, b !== null && q !== null ? `waited ${duration(b - q)}` : null,
        b !== null && e !== null ? `ran ${duration(e - b)}` : null, flag].filter(Boolean).join(', ');
      return h(`li.wf-row.depth-${r.depth}${flag ? '.hit-limit' : ''}`, { dataset: { row: r.id } },
        h('button.wf-pick', {
          type: 'button', title: `${r.label}: ${said}`, 'aria-pressed': r.id === selected ? 'true' : 'false',
          'aria-label': `${r.label}: ${said}`,
          onclick: () => onSelect(r.id === selected ? null : r.id),
        }, h('span.wf-label', r.label, flag ? h('span.limit-mark', { 'aria-hidden': 'true' }, ' ⚑') : null), track));
    })),
    chosen ? detail(chosen, origin) : h('p.muted.wf-hint', 'Choose a bar to see its times.'));
}
