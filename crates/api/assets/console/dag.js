// A Process version's steps drawn as a DAG (SVG). A `sequential` step waits for every step
// before it, a `parallel` one only for its `dependsOn` (seed/60-processes.yaml), so columns are
// the order steps can run in and steps that share a column run side by side.

import { h, mount } from './dom.js';
import { step as stepStatus } from './statuses.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 170;
const H = 54;
const GAP_X = 60;
const GAP_Y = 18;

function svg(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Each step's effective predecessors, its column, and the edges worth drawing. */
export function layout(steps) {
  const index = new Map(steps.map((s, i) => [s.id, i]));
  const deps = steps.map((s, i) => {
    const mode = s.execution?.mode || 'sequential';
    const listed = (s.dependsOn || []).filter((d) => index.has(d));
    return mode === 'parallel' ? listed : [...new Set([...listed, ...steps.slice(0, i).map((p) => p.id)])];
  });
  const column = [];
  steps.forEach((s, i) => {
    column[i] = deps[i].reduce((c, d) => Math.max(c, column[index.get(d)] + 1), 0);
  });
  // Draw an edge only from predecessors that no other predecessor already follows.
  const ancestors = steps.map(() => new Set());
  steps.forEach((s, i) => deps[i].forEach((d) => {
    ancestors[i].add(d);
    ancestors[index.get(d)].forEach((a) => ancestors[i].add(a));
  }));
  const edges = [];
  steps.forEach((s, i) => deps[i].forEach((d) => {
    const implied = deps[i].some((o) => o !== d && ancestors[index.get(o)].has(d));
    if (!implied) edges.push([d, s.id]);
  }));
  return { column, edges };
}

/** `status(stepId)` → a status word or undefined; `note(stepId)` → extra text (an agent's calls);
 * `onSelect(stepId)` when a step is chosen; `mark(stepId)` → extra classes for the step's box
 * (a fork's reused step, a diff's verdict), so a page can restyle a box without a new status. */
export function drawDag(steps, status = () => undefined, onSelect = null, note = () => '', mark = () => '') {
  const { column, edges } = layout(steps);
  const rows = [];
  const pos = new Map();
  steps.forEach((s, i) => {
    const c = column[i];
    rows[c] = (rows[c] || 0) + 1;
    pos.set(s.id, { x: c * (W + GAP_X) + 8, y: (rows[c] - 1) * (H + GAP_Y) + 8 });
  });
  const width = (Math.max(0, ...column) + 1) * (W + GAP_X);
  const height = Math.max(1, ...rows.filter(Boolean)) * (H + GAP_Y) + 8;
  const root = svg('svg', { class: 'dag', viewBox: `0 0 ${width} ${height}`, width, height, role: 'group', 'aria-label': 'Steps' });
  const defs = svg('defs', {});
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' });
  marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }));
  defs.append(marker);
  root.append(defs);
  for (const [from, to] of edges) {
    const a = pos.get(from);
    const b = pos.get(to);
    const x1 = a.x + W; const y1 = a.y + H / 2; const x2 = b.x; const y2 = b.y + H / 2;
    root.append(svg('path', { class: 'edge', d: `M${x1},${y1} C${x1 + GAP_X / 2},${y1} ${x2 - GAP_X / 2},${y2} ${x2},${y2}`, 'marker-end': 'url(#arrow)' }));
  }
  for (const s of steps) {
    const p = pos.get(s.id);
    const word = status(s.id);
    const g = svg('g', {
      class: `node s-${word || 'none'} ${mark(s.id) || ''}`.trim(), transform: `translate(${p.x},${p.y})`, 'data-step': s.id,
      tabindex: onSelect ? 0 : -1, role: onSelect ? 'button' : 'img',
      'aria-label': `${s.id}: ${[word || 'not started', note(s.id)].filter(Boolean).join(', ')}`,
    });
    g.append(svg('rect', { width: W, height: H, rx: 6 }));
    g.append(svg('text', { x: 8, y: 18, class: 'step-id' }, s.id));
    const what = s.process ? `▸ Process ${s.process}` : s.tool ? `Tool ${s.tool}` : 'agent';
    g.append(svg('text', { x: 8, y: 34, class: 'step-what' }, what.length > 24 ? `${what.slice(0, 23)}…` : what));
    const mode = s.execution?.mode === 'parallel' ? 'parallel' : '';
    g.append(svg('text', { x: 8, y: 48, class: 'step-status' }, [word, mode, note(s.id)].filter(Boolean).join(' · ')));
    if (onSelect) {
      g.addEventListener('click', () => onSelect(s.id));
      g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onSelect(s.id); } });
    }
    root.append(g);
  }
  const wrap = document.createElement('div');
  wrap.className = 'dag-wrap';
  wrap.append(root);
  return wrap;
}

// ---- Playback of a run: a scrubber over its event log, Play and Pause, and the DAG drawn with each
// step's status as of the scrubber's position, beside the events up to there. The log is the
// run's SSE stream read from its start (the page feeds every event in with `add`), so a settled
// run replays exactly what happened, and a live one grows while it is watched.

const TICK_MS = 350;

/** The status a step has after an event of this kind; undefined leaves it as it was. */
function statusAfter(kind) {
  switch (kind) {
    case 'step.queued': case 'step.retrying': return stepStatus.queued;
    case 'step.started': case 'step.approval': return stepStatus.running;
    case 'step.completed': case 'step.reused': return stepStatus.completed;
    case 'step.failed': return stepStatus.failed;
    case 'step.skipped': return stepStatus.skipped;
    case 'step.waiting': return stepStatus.waitingForApproval;
    default: return undefined;
  }
}

/** `steps`: the version's steps (for the DAG); `label(stepId)`: how a step or an agent's call is
 * named ("answer · Model turn 1"), as in the run page's timeline. */
export function playback(steps, label) {
  const events = [];
  let position = 0; // how many events have happened at the scrubber's position
  let following = true; // at the end: new events move the scrubber with them
  let timer = null;
  let complete = false;

  const scrubber = h('input#playback-scrubber', {
    type: 'range', min: 0, max: 0, value: 0, step: 1, 'aria-label': 'Position in the event log',
    oninput: () => { pause(); seek(Number(scrubber.value)); },
  });
  const play = h('button.play', { type: 'button', onclick: () => start() }, 'Play');
  const stop = h('button.pause', { type: 'button', onclick: () => pause() }, 'Pause');
  const where = h('span.playback-where.muted', { 'aria-live': 'polite' });
  const dagSlot = h('div.playback-dag');
  const list = h('ol.playback-events');
  const el = h('section.playback', { 'aria-label': 'Playback' },
    h('h2', 'Playback'),
    h('div.playback-controls', play, stop, scrubber, where),
    dagSlot, list);

  function draw() {
    const shown = events.slice(0, position);
    const status = new Map();
    const reused = new Set();
    const calls = new Map();
    for (const e of shown) {
      if (!e.stepId) continue;
      const [sid, call] = e.stepId.split('#');
      if (call) {
        if (e.kind === 'step.started') calls.set(sid, (calls.get(sid) || 0) + 1);
        continue;
      }
      const next = statusAfter(e.kind);
      if (next) status.set(sid, next);
      if (e.kind === 'step.reused') reused.add(sid);
    }
    const last = shown[shown.length - 1];
    mount(dagSlot, drawDag(steps, (sid) => status.get(sid), null,
      (sid) => [reused.has(sid) ? 'reused' : '', calls.get(sid) ? `${calls.get(sid)} call(s)` : ''].filter(Boolean).join(', '),
      (sid) => [reused.has(sid) ? 'reused' : '', last?.stepId?.split('#')[0] === sid ? 'current' : ''].join(' ')));
    const t0 = events[0] ? new Date(events[0].at) : null;
    mount(list, shown.map((e, i) => h(`li.playback-event${i === shown.length - 1 ? '.current' : ''}`, {
      dataset: { kind: e.kind, seq: e.seq },
    },
    h('span.offset.muted', t0 ? `+${Math.max(0, new Date(e.at) - t0)} ms ` : ''),
    h('code', e.kind), e.stepId ? [' ', h('strong', label(e.stepId))] : null,
    e.data && Object.keys(e.data).length ? h('details', h('summary', 'Data'), h('pre.json', JSON.stringify(e.data, null, 2))) : null)));
    // The list scrolls itself (not the page) to keep the newest event in view.
    list.scrollTop = list.scrollHeight;
    where.textContent = `${position} of ${events.length} event${events.length === 1 ? '' : 's'}${complete ? '' : ' so far'}`
      + (last ? ` · ${last.kind}` : '');
    play.disabled = timer !== null || (position >= events.length && complete);
    stop.disabled = timer === null;
  }

  // A settled run's whole log arrives at once: draw once for the lot, not once per event.
  let drawSoon = null;
  function later() {
    drawSoon ??= setTimeout(() => { drawSoon = null; draw(); }, 30);
  }

  function seek(n) {
    position = Math.max(0, Math.min(events.length, n));
    following = position === events.length;
    scrubber.value = String(position);
    draw();
  }

  function pause() {
    clearInterval(timer);
    timer = null;
    draw();
  }

  function start() {
    if (position >= events.length) seek(0); // Play at the end replays from the start
    timer = setInterval(() => {
      if (position >= events.length) { pause(); return; }
      seek(position + 1);
    }, TICK_MS);
    draw();
  }

  draw();
  return {
    el,
    /** An event of the run's log (step.delta, streamed text, is not one). */
    add(event) {
      if (!event || typeof event !== 'object' || !event.kind) return;
      events.push(event);
      scrubber.max = String(events.length);
      if (following && timer === null) {
        position = events.length;
        scrubber.value = String(position);
      }
      later();
    },
    /** The log is whole: the stream ended after the run's terminal event. */
    done() { complete = true; later(); },
    /** The page is left: no timer keeps running. */
    stop() { clearInterval(timer); timer = null; clearTimeout(drawSoon); },
  };
}
