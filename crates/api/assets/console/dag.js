// A Process version's steps drawn as a DAG (SVG). A `sequential` step waits for every step
// before it, a `parallel` one only for its `dependsOn` (seed/60-processes.yaml), so columns are
// the order steps can run in and steps that share a column run side by side.

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
 * `onSelect(stepId)` when a step is chosen. */
export function drawDag(steps, status = () => undefined, onSelect = null, note = () => '') {
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
      class: `node s-${word || 'none'}`, transform: `translate(${p.x},${p.y})`, 'data-step': s.id,
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
