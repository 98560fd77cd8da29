// Conversations: the list, and one conversation as a thread along its current path with
// `< n/m >` on every Turn that has several Alternatives, the actions that branch it, and its
// working memory beside it. Generating answers stream in over the run's SSE.

import { all, get, patch, post, put, runEvents } from './api.js';
import { badge, h, mount, when } from './dom.js';

export async function conversationList(view, { showError }) {
  const archived = new URLSearchParams(location.hash.split('?')[1] || '').get('archived') === '1';
  const items = await all(`/v1/conversations${archived ? '?includeArchived=true' : ''}`);
  items.sort((a, b) => (b.updatedAt || '').localeCompare(a.updatedAt || ''));
  const title = h('input#new-title', { name: 'title', maxlength: 500, placeholder: 'Optional' });
  const form = h('form.inline', {
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const c = await post('/v1/conversations', title.value.trim() ? { title: title.value.trim() } : {});
        location.hash = `#/c/${c.id}`;
      } catch (err) { showError(err); }
    },
  }, h('label', { for: 'new-title' }, 'Title'), title, h('button', { type: 'submit' }, 'New conversation'));
  const toggle = h('input#show-archived', {
    type: 'checkbox',
    checked: archived,
    onchange: (e) => { location.hash = e.target.checked ? '#/?archived=1' : '#/'; },
  });
  mount(view,
    h('h1', 'Conversations'),
    form,
    h('p', toggle, h('label', { for: 'show-archived' }, ' Show archived')),
    h('ul.cards', { id: 'conversation-list' }, items.length ? items.map((c) => h('li',
      h('a', { href: `#/c/${c.id}` }, c.title || 'Untitled conversation'),
      ' ', c.status === 'archived' ? badge('archived') : null,
      h('span.muted', ` ${c.turnCount} turns · updated ${when(c.updatedAt)}`),
      c.forkedFrom ? h('span.muted', ' · fork') : null))
      : h('li.muted', 'No conversations yet.')));
}

/** The Turns along the current path: from the root, each time into the child Turn on the way to
 * the conversation's current Alternative, else the one that answers the active Alternative (the
 * newest such), else the newest child (its answer is then stale). */
export function threadOf(turns, currentAlternativeId) {
  const altById = new Map(turns.flatMap((t) => t.alternatives.map((a) => [a.id, a])));
  const onWay = new Set();
  for (let a = altById.get(currentAlternativeId); a && !onWay.has(a.id); a = altById.get(a.respondsTo)) {
    onWay.add(a.id);
  }
  const kids = new Map();
  for (const t of turns) {
    const k = t.parentTurnId || '';
    if (!kids.has(k)) kids.set(k, []);
    kids.get(k).push(t);
  }
  const newest = (list) => list.reduce((a, b) => ((b.timestamp || '') >= (a.timestamp || '') ? b : a));
  const thread = [];
  let next = (kids.get('') || []).length ? newest(kids.get('')) : null;
  while (next && thread.length <= turns.length) {
    thread.push(next);
    const active = activeOf(next);
    const children = kids.get(next.id) || [];
    if (!children.length) break;
    const towards = children.filter((c) => c.alternatives.some((a) => onWay.has(a.id) && a.respondsTo === active?.id));
    const answering = children.filter((c) => c.alternatives.some((a) => a.respondsTo === active?.id));
    next = newest(towards.length ? towards : answering.length ? answering : children);
  }
  return thread;
}

const activeOf = (turn) => turn.alternatives.find((a) => a.isActive) || turn.alternatives[0];
const speakerName = { user: 'You', agent: 'Agent', system: 'System' };

export async function conversationPage(view, id, { showError }) {
  const state = {
    replyTo: null, editing: null, mapOpen: false, draft: '', seq: 0, left: false,
    live: new Map(), streams: new Map(), processes: [],
  };
  view.addEventListener('console:leave', () => {
    state.left = true;
    state.streams.forEach((s) => s.abort());
  }, { once: true });
  state.processes = (await all('/v1/processes')).filter((p) => p.enabled);

  // Answers can overlap; only the newest request's is drawn.
  async function reload() {
    const n = ++state.seq;
    try {
      const tree = await get(`/v1/conversations/${id}/tree`);
      const thread = threadOf(tree.turns, tree.conversation.currentAlternativeId);
      const last = thread[thread.length - 1];
      const at = last ? `?alternativeId=${encodeURIComponent(activeOf(last).id)}` : '';
      const memory = await get(`/v1/conversations/${id}/working-memory${at}`);
      if (n !== state.seq || state.left) return;
      const focused = document.activeElement?.closest?.('[data-turn-id]')?.dataset.turnId;
      render(tree, memory);
      if (focused) view.querySelector(`[data-turn-id="${focused}"]`)?.focus();
      follow(tree);
    } catch (err) { if (!state.left) showError(err); }
  }

  // Runs a change, then redraws; its button stays disabled meanwhile (no double submits).
  const act = (fn) => async (e) => {
    e?.preventDefault?.();
    const button = e?.submitter || (e?.currentTarget instanceof HTMLButtonElement ? e.currentTarget : null);
    if (button) button.disabled = true;
    try { await fn(e); await reload(); } catch (err) { showError(err); } finally { if (button) button.disabled = false; }
  };

  // Opens one SSE stream per generating answer; deltas fill its text, the end reloads.
  function follow(tree) {
    if (state.left) return;
    for (const turn of tree.turns) {
      for (const alt of turn.alternatives) {
        if (alt.cacheStatus !== 'generating' || !alt.runId || state.streams.has(alt.runId)) continue;
        const stop = new AbortController();
        state.streams.set(alt.runId, stop);
        let piece = null;
        runEvents(alt.runId, (kind, data) => {
          if (kind !== 'step.delta') return;
          // Each model turn (and each attempt) streams its own text from index 0.
          if (data.index === 0 || data.stepId !== piece) state.live.set(alt.id, '');
          piece = data.stepId;
          state.live.set(alt.id, (state.live.get(alt.id) || '') + data.text);
          const el = view.querySelector(`[data-alt-id="${alt.id}"] .content`);
          if (el) el.textContent = state.live.get(alt.id);
        }, stop.signal).then(() => 0, (err) => {
          if (err.name === 'AbortError') return 0;
          showError(err);
          return 2000; // the stream broke: look again a little later, not in a tight loop
        }).then((delay) => {
          state.streams.delete(alt.runId);
          if (!state.left && !stop.signal.aborted) setTimeout(() => { if (!state.left) reload(); }, delay);
        });
      }
    }
  }

  function processSelect(selected, label) {
    return h('select', { 'aria-label': label },
      state.processes.map((p) => h('option', { value: p.id, selected: p.id === selected }, p.name || p.id)));
  }

  function versionNav(turn, active) {
    const alts = [...turn.alternatives].sort((a, b) => a.sequence - b.sequence);
    if (alts.length < 2) return null;
    const i = alts.findIndex((a) => a.id === active.id);
    const go = (j) => act(() => put(`/v1/turns/${turn.id}/active`, { alternativeId: alts[j].id }));
    return h('span.versions', { role: 'group', 'aria-label': 'Versions' },
      h('button.prev', { type: 'button', 'aria-label': 'Previous version', disabled: i === 0, onclick: go(i - 1) }, '<'),
      h('span.count', { 'aria-live': 'polite' }, `${i + 1}/${alts.length}`),
      h('button.next', { type: 'button', 'aria-label': 'Next version', disabled: i === alts.length - 1, onclick: go(i + 1) }, '>'));
  }

  function turnItem(turn, isLast) {
    const alt = activeOf(turn);
    const human = turn.speaker !== 'agent';
    const text = alt.cacheStatus === 'generating' ? (state.live.get(alt.id) || '') : (alt.content ?? '');
    const status = [];
    if (alt.cacheStatus === 'stale') status.push(badge('stale', 'answered a different version'), h('span.note', ' answered a different version'));
    if (alt.cacheStatus === 'generating') status.push(badge('generating'));
    if (alt.cacheStatus === 'failed') {
      status.push(badge('failed'), h('span.note', ` ${alt.error?.message || alt.error?.code || JSON.stringify(alt.error)}`));
    }
    const editing = state.editing === alt.id;
    const editor = h('textarea', { 'aria-label': 'Edited message', rows: 3 }, alt.content || '');
    const regenerateWith = processSelect(alt.executedBy?.processId || '', 'Answer with Process');
    const body = editing
      ? h('form.edit', {
        onsubmit: act(async () => {
          await post(`/v1/turns/${turn.id}/alternatives`, { content: editor.value });
          state.editing = null;
        }),
      }, editor, h('button', { type: 'submit' }, 'Save as new version'),
      h('button', { type: 'button', onclick: () => { state.editing = null; reload(); } }, 'Cancel'))
      : h('div.content', text || (alt.cacheStatus === 'generating' ? '…' : ''));
    const actions = [];
    if (human && !editing) {
      actions.push(h('button.edit-btn', { type: 'button', onclick: () => { state.editing = alt.id; reload(); } }, 'Edit'));
    }
    if (!human && state.processes.length && alt.cacheStatus !== 'generating') {
      actions.push(regenerateWith, h('button.regenerate', {
        type: 'button',
        onclick: act(() => post(`/v1/turns/${turn.id}/alternatives`, { processId: regenerateWith.value })),
      }, 'Regenerate'));
    }
    if (!isLast) {
      actions.push(h('button.reply-here', {
        type: 'button',
        onclick: () => { state.replyTo = turn.id; reload(); },
      }, 'Continue from here'));
    }
    if (alt.cacheStatus !== 'generating') {
      actions.push(h('button.fork', {
        type: 'button',
        onclick: async () => {
          try {
            const c = await post(`/v1/conversations/${id}/fork`, { turnId: turn.id, alternativeId: alt.id });
            location.hash = `#/c/${c.id}`;
          } catch (err) { showError(err); }
        },
      }, 'Fork from here'));
    }
    const onkeydown = (e) => {
      if (e.target.closest('textarea, input, select')) return;
      const nav = e.currentTarget.querySelector(e.key === 'ArrowLeft' ? 'button.prev' : 'button.next');
      if ((e.key === 'ArrowLeft' || e.key === 'ArrowRight') && nav && !nav.disabled) { e.preventDefault(); nav.click(); }
    };
    return h(`li.turn.${turn.speaker}`, {
      dataset: { turnId: turn.id, altId: alt.id, status: alt.cacheStatus },
      tabindex: 0,
      'aria-label': `${speakerName[turn.speaker] || turn.speaker}, turn ${turn.sequence}`,
      onkeydown,
    },
    h('div.turn-head', h('strong', speakerName[turn.speaker] || turn.speaker), ' ', versionNav(turn, alt), ' ', status),
    body,
    h('div.meta',
      alt.executedBy ? `${alt.executedBy.processId} v${alt.executedBy.version} · ` : '',
      alt.runId ? h('a.run-link', { href: `#/runs/${alt.runId}` }, 'View run') : null,
      alt.runId ? ' · ' : '', when(alt.createdAt)),
    actions.length ? h('div.actions', actions) : null);
  }

  function memoryPanel(m) {
    return h('aside.memory', { 'aria-label': 'Working memory' },
      h('h2', 'Working memory'),
      h('p', h('strong', `${m.totalTokens}`), ' tokens'),
      h('h3', 'Path'),
      h('ol.path', m.immediatePath.map((p) => h('li', h('span.muted', `${speakerName[p.speaker] || p.speaker}: `),
        (p.content || '').slice(0, 140), h('span.muted', ` (${p.tokens ?? '?'} tokens)`)))),
      h('h3', 'Summaries'),
      m.summaries.length ? h('ul', m.summaries.map((s) => h('li', s.content.slice(0, 200),
        h('span.muted', ` (level ${s.compressionLevel}, ${s.tokenCount} tokens)`)))) : h('p.muted', 'None'),
      h('h3', 'Entities'),
      m.activeEntities.length ? h('ul', m.activeEntities.map((e) => h('li', e.name || e.entityUuid)))
        : h('p.muted', 'None'),
      h('h3', 'Notes to self'),
      (m.introspectionContext || []).length
        ? h('ol.notes', m.introspectionContext.map((n) => h('li', n.content.slice(0, 200),
          h('span.muted', ` (position ${n.carouselPosition}, ${n.tokens} tokens)`))))
        : h('p.muted', 'None'));
  }

  // Makes an Alternative and every Alternative it answers active, root first, so the thread
  // then runs through it.
  async function goTo(alt, altById) {
    const chain = [];
    for (let a = alt; a; a = a.respondsTo ? altById.get(a.respondsTo) : null) chain.unshift(a);
    for (const a of chain) {
      if (!a.isActive) await put(`/v1/turns/${a.turnId}/active`, { alternativeId: a.id });
    }
  }

  /** The whole tree, compact: each Turn with its versions; choosing one moves the thread there. */
  function branchMap(turns) {
    const kids = new Map();
    for (const t of turns) {
      const k = t.parentTurnId || '';
      if (!kids.has(k)) kids.set(k, []);
      kids.get(k).push(t);
    }
    const altById = new Map(turns.flatMap((t) => t.alternatives.map((a) => [a.id, a])));
    const branch = (parentId) => {
      const list = kids.get(parentId) || [];
      if (!list.length) return null;
      return h('ul', list.map((t) => h('li.map-turn',
        h('span.muted', `${speakerName[t.speaker] || t.speaker} · turn ${t.sequence}: `),
        [...t.alternatives].sort((a, b) => a.sequence - b.sequence).map((a) => h('button.map-alt', {
          type: 'button',
          'aria-pressed': a.isActive ? 'true' : 'false',
          title: (a.content || a.cacheStatus).slice(0, 120),
          onclick: act(() => goTo(a, altById)),
        }, `v${a.sequence}${a.isActive ? ' (active)' : ''}${a.cacheStatus === 'stale' ? ' stale' : ''}`)),
        branch(t.id))));
    };
    return h('details.branch-map', {
      open: state.mapOpen,
      ontoggle: (e) => { state.mapOpen = e.currentTarget.open; },
    }, h('summary', `Branch map (${turns.length} turns)`), branch(''));
  }

  function render(tree, memory) {
    const conv = tree.conversation;
    const thread = threadOf(tree.turns, conv.currentAlternativeId);
    const byId = new Map(tree.turns.map((t) => [t.id, t]));
    const parent = (state.replyTo && byId.get(state.replyTo)) || thread[thread.length - 1] || null;
    const rename = h('input#conv-title', { value: conv.title || '', maxlength: 500 });
    const message = h('textarea#message', {
      rows: 3, required: true, placeholder: 'Write a message', oninput: (e) => { state.draft = e.target.value; },
    });
    message.value = state.draft;
    const answerWith = processSelect(conv.defaultProcessId || '', 'Process to answer with');
    const archived = conv.status === 'archived';
    mount(view,
      h('div.conv-head',
        h('h1', conv.title || 'Untitled conversation', archived ? [' ', badge('archived')] : null),
        h('form.inline', {
          onsubmit: act(() => patch(`/v1/conversations/${id}`, { title: rename.value.trim() || null })),
        }, h('label', { for: 'conv-title' }, 'Title'), rename, h('button', { type: 'submit' }, 'Rename')),
        h('button.archive', {
          type: 'button',
          onclick: act(() => patch(`/v1/conversations/${id}`, { status: archived ? 'active' : 'archived' })),
        }, archived ? 'Restore' : 'Archive'),
        conv.forkedFrom ? h('p.muted', 'Forked from ', h('a', { href: `#/c/${conv.forkedFrom.conversationId}` }, 'another conversation')) : null),
      h('div.split',
        h('section.thread-wrap',
          tree.turns.length > 1 ? branchMap(tree.turns) : null,
          h('ol.thread', { 'aria-label': 'Conversation' }, thread.map((t, i) => turnItem(t, i === thread.length - 1))),
          state.replyTo && parent ? h('p.replying', `Continuing from turn ${parent.sequence}. `,
            h('button', { type: 'button', onclick: () => { state.replyTo = null; reload(); } }, 'Continue at the end instead')) : null,
          h('form.composer', {
            onsubmit: act(async () => {
              const body = { speaker: 'user', content: message.value };
              if (parent) body.parentTurnId = parent.id;
              await post(`/v1/conversations/${id}/turns`, body);
              state.replyTo = null;
              state.draft = '';
            }),
          },
          h('label', { for: 'message' }, 'Message'), message,
          h('div.actions', h('button#send', { type: 'submit' }, 'Send'),
            parent && state.processes.length ? [answerWith, h('button#ask', {
              type: 'button',
              onclick: act(async () => {
                await post(`/v1/conversations/${id}/agent-turns`, { processId: answerWith.value, parentTurnId: parent.id });
                state.replyTo = null;
              }),
            }, 'Answer with Process')] : null))),
        memoryPanel(memory)));
  }

  await reload();
}
