// Building DOM without a framework: h('tag#id.class', {attrs}, ...children). Text is always set
// as text (never as HTML), so nothing from the API can inject markup.

export function h(spec, attrs, ...children) {
  const [tagAndId, ...classes] = spec.split('.');
  const [tag, id] = tagAndId.split('#');
  const el = document.createElement(tag || 'div');
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces a container's content. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function json(value) {
  return h('pre.json', JSON.stringify(value, null, 2));
}

/** A status word as a badge: the word itself carries the meaning, colour only repeats it. */
export function badge(word, title) {
  return h(`span.badge.b-${String(word).replace(/[^a-z_]/gi, '')}`, { title }, word);
}

/** A row is its cells, or `{ cells, className }` when the row itself must look different. */
const row = (r) => (Array.isArray(r) ? h('tr', r.map((c) => h('td', c)))
  : h('tr', { class: r.className }, r.cells.map((c) => h('td', c))));

export function table(headers, rows, caption) {
  return h('div.table-wrap', h('table',
    caption && h('caption', caption),
    h('thead', h('tr', headers.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', rows.length ? rows.map(row)
      : h('tr', h('td', { colspan: headers.length }, 'Nothing here yet.')))));
}

/** Milliseconds as people read them: `840 ms`, `4.2 s`, `3 min 12 s`, `2 h 5 min`. */
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
