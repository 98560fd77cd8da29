// Conversations: the list, and one conversation as a thread along its current path with
// `< n/m >` on every Turn that has several Alternatives, the actions that branch it, and its
// working memory beside it. Generating answers stream in over the run's SSE.

import { all, get, patch, post, put, runEvents, session } from './api.js';
import { badge, h, mount, when } from './dom.js';
import { copyText, markdown } from './markdown.js';
import { alternative as altStatus } from './statuses.js';
import { explain } from './words.js';
import { lineageQuery, neo4jLink } from './neo4j.js';


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
    live: new Map(), streams: new Map(), processes: [], turns: [],
    // The message on its way (shown at once, marked "sending…"), the last tree drawn, whether
    // to follow the newest answer, and what to focus after the next drawing.
    pending: null, last: null, size: null, stick: false, focus: null,
    // The Alternative a link points at (`#/c/<id>?alt=<alternativeId>`, from a run or a search
    // hit): scrolled to and highlighted once the thread is drawn.
    linked: new URLSearchParams(location.hash.split('?')[1] || '').get('alt'),
  };
  // Following the newest answer: the page scrolls with it while the reader is at the bottom;
  // once they scroll up, a button offers the way back instead.
  const nearBottom = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  const jump = h('button#jump-latest', { type: 'button', hidden: true, onclick: () => toLatest() }, 'Jump to latest ↓');
  function toLatest() {
    window.scrollTo({ top: document.documentElement.scrollHeight });
    jump.hidden = true;
  }
  const keepUp = (wasNear, grew) => {
    if (wasNear) toLatest();
    else if (grew) jump.hidden = false;
  };
  const onScroll = () => { if (nearBottom()) jump.hidden = true; };
  window.addEventListener('scroll', onScroll, { passive: true });
  view.addEventListener('console:leave', () => {
    state.left = true;
    state.streams.forEach((s) => s.abort());
    window.removeEventListener('scroll', onScroll);
  }, { once: true });
  // Forks made from this conversation, shown on the branch map at the Turn they started from.
  state.forks = (await all('/v1/conversations').catch(() => []))
    .filter((c) => c.forkedFrom?.conversationId === id);
  // Only Processes that can answer a conversation for this user now (GET /v1/me/chat-processes).
  state.processes = (await get('/v1/me/chat-processes')).items.filter((p) => p.ready);
  const ready = (pid) => state.processes.some((p) => p.id === pid);
  // The conversation's default, else this user's, else the first that can answer.
  const defaultPick = (conv) => [conv?.defaultProcessId, session.me?.defaultProcessId]
    .find((pid) => pid && ready(pid)) || state.processes[0]?.id || '';

  // Answers can overlap; only the newest request's is drawn. The first load's failure (an
  // unknown conversation) goes to the router, which shows a not-found page.
  async function reload(first = false) {
    const n = ++state.seq;
    try {
      const tree = await get(`/v1/conversations/${id}/tree`);
      const thread = threadOf(tree.turns, tree.conversation.currentAlternativeId);
      const last = thread[thread.length - 1];
      const at = last ? `?alternativeId=${encodeURIComponent(activeOf(last).id)}` : '';
      const memory = await get(`/v1/conversations/${id}/working-memory${at}`);
      if (n !== state.seq || state.left) return;
      const focused = document.activeElement?.closest?.('[data-turn-id]')?.dataset.turnId;
      const wasNear = first || state.stick || nearBottom();
      const typing = document.activeElement?.id === 'message';
      const size = tree.turns.reduce((k, t) => k + t.alternatives.length, 0);
      const grew = state.size !== null && size > state.size;
      state.size = size;
      state.stick = false;
      render(tree, memory);
      if (focused) view.querySelector(`[data-turn-id="${focused}"]`)?.focus();
      keepUp(wasNear, grew);
      // A conversation opens (and a message is sent) with the composer ready for the next one.
      // Redrawing (an answer arriving) keeps whoever was typing in the composer typing.
      const focus = first || typing ? '#message' : state.focus;
      state.focus = null;
      const el = focus ? view.querySelector(focus) : null;
      if (el) {
        el.focus({ preventScroll: !wasNear });
        if (el.tagName === 'TEXTAREA') el.setSelectionRange(el.value.length, el.value.length);
      }
      follow(tree);
      if (first && state.linked) {
        const el = view.querySelector(`[data-alt-id="${CSS.escape(state.linked)}"]`);
        el?.scrollIntoView({ block: 'center' });
        el?.focus({ preventScroll: true });
      }
    } catch (err) {
      if (first) throw err;
      if (!state.left) showError(err);
    }
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
        if (alt.cacheStatus !== altStatus.generating || !alt.runId || state.streams.has(alt.runId)) continue;
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
          if (!el) return;
          const wasNear = nearBottom();
          mount(el, markdown(state.live.get(alt.id)));
          keepUp(wasNear, true);
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
      state.processes.map((p) => h('option', { value: p.id, selected: p.id === selected, title: p.description || '' }, p.name || p.id)));
  }

  // Answers a message again: a new version of the answer Turn under it, or a first answer.
  async function answer(turn, next, processId) {
    if (!processId) return;
    if (next && next.speaker === 'agent') {
      await post(`/v1/turns/${next.id}/alternatives`, { processId });
    } else {
      await post(`/v1/conversations/${id}/agent-turns`, { processId, parentTurnId: turn.id });
    }
  }

  // Choosing a version of a message also shows the answer to that version, when there is one.
  async function choose(turn, alt, next) {
    await put(`/v1/turns/${turn.id}/active`, { alternativeId: alt.id });
    const answers = (next?.alternatives || []).filter((a) => a.respondsTo === alt.id);
    const newest = answers.sort((a, b) => b.sequence - a.sequence)[0];
    if (newest && !newest.isActive) await put(`/v1/turns/${next.id}/active`, { alternativeId: newest.id });
  }

  /** `< n/m >` over a Turn's versions and those of its sibling Turns (a "Continue from here"
   * branch is a Turn of its own beside the one it branched from), in the order they were made. */
  function versionNav(turn, active, next) {
    const siblings = state.turns
      .filter((t) => (t.parentTurnId || '') === (turn.parentTurnId || '') && t.speaker === turn.speaker)
      .sort((a, b) => a.sequence - b.sequence || (a.timestamp || '').localeCompare(b.timestamp || ''));
    const alts = siblings.flatMap((t) => [...t.alternatives].sort((a, b) => a.sequence - b.sequence));
    if (alts.length < 2) return null;
    const i = alts.findIndex((a) => a.id === active.id);
    const altById = new Map(state.turns.flatMap((t) => t.alternatives.map((a) => [a.id, a])));
    // Another version of this Turn: it and its answer become active. Another Turn's: the thread
    // moves to it (the conversation's current message is set to it, even when already active).
    const go = (j) => act(() => (alts[j].turnId === turn.id || !alts[j].turnId
      ? choose(turn, alts[j], next)
      : goTo(alts[j], altById, true)));
    return h('span.versions', { role: 'group', 'aria-label': 'Versions' },
      h('button.prev', { type: 'button', 'aria-label': 'Previous version', disabled: i === 0, onclick: go(i - 1) }, '<'),
      h('span.count', { 'aria-live': 'polite' }, `${i + 1}/${alts.length}`),
      h('button.next', { type: 'button', 'aria-label': 'Next version', disabled: i === alts.length - 1, onclick: go(i + 1) }, '>'));
  }

  function turnItem(turn, next, conv) {
    const isLast = !next;
    const alt = activeOf(turn);
    const human = turn.speaker !== 'agent';
    const text = alt.cacheStatus === altStatus.generating ? (state.live.get(alt.id) || '') : (alt.content ?? '');
    const status = [];
    if (alt.cacheStatus === altStatus.stale) status.push(badge(altStatus.stale, 'answered a different version'), h('span.note', ' answered a different version'));
    if (alt.cacheStatus === altStatus.generating) status.push(badge(altStatus.generating));
    if (alt.cacheStatus === altStatus.failed) {
      status.push(badge(altStatus.failed), h('span.note', ' ', explain(alt.error || { code: 'FAILED' })));
    }
    const editing = state.editing === alt.id;
    const editor = h('textarea', { 'aria-label': 'Edited message', rows: 3 }, alt.content || '');
    // Esc leaves the edit as it was.
    editor.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') { e.preventDefault(); state.editing = null; state.focus = `[data-turn-id="${turn.id}"] button.edit-btn`; reload(); }
    });
    const regenerateWith = processSelect(alt.executedBy?.processId || '', 'Answer with Process');
    const body = editing
      ? h('form.edit', {
        // Saving an edit answers the edited message again, as chat users expect.
        onsubmit: act(async () => {
          await post(`/v1/turns/${turn.id}/alternatives`, { content: editor.value });
          state.editing = null;
          const before = next && next.speaker === 'agent' ? activeOf(next).executedBy?.processId : null;
          await answer(turn, next, (before && ready(before)) ? before : defaultPick(conv));
        }),
      }, editor, h('button', { type: 'submit' }, 'Save as new version'),
      h('button', { type: 'button', onclick: () => { state.editing = null; reload(); } }, 'Cancel'))
      // What a person typed shows as typed; an agent's answer is Markdown.
      : h('div.content', !text ? (alt.cacheStatus === altStatus.generating ? '…' : '') : human ? text : markdown(text));
    const actions = [];
    if (human && !editing) {
      actions.push(h('button.edit-btn', {
        type: 'button',
        onclick: () => { state.editing = alt.id; state.focus = 'form.edit textarea'; reload(); },
      }, 'Edit'));
    }
    if (!human && alt.cacheStatus === altStatus.failed && alt.executedBy && ready(alt.executedBy.processId)) {
      actions.push(h('button.retry', {
        type: 'button',
        onclick: act(() => post(`/v1/turns/${turn.id}/alternatives`, { processId: alt.executedBy.processId })),
      }, 'Retry'));
    }
    // The compact bar: Regenerate (with the Process that wrote it) and its ▾ menu (another
    // Process; the answer only, from a fork of its run), Copy, Continue from here, Fork.
    if (!human && state.processes.length && alt.cacheStatus !== altStatus.generating) {
      actions.push(h('button.regenerate', {
        type: 'button',
        onclick: act(() => post(`/v1/turns/${turn.id}/alternatives`, { processId: regenerateWith.value })),
      }, 'Regenerate'));
      const menu = h('details.regen-menu',
        h('summary', { 'aria-label': 'More ways to regenerate', title: 'More ways to regenerate' }, '▾'),
        h('div.menu',
          h('label', 'With another Process ', regenerateWith),
          h('button.regenerate-with', {
            type: 'button',
            onclick: act(() => post(`/v1/turns/${turn.id}/alternatives`, { processId: regenerateWith.value })),
          }, 'Regenerate with it'),
          // A fork of the run that wrote this answer: its earlier steps (retrieval, tools) are
          // reused, and only the last step, the answer itself, runs again.
          alt.runId && alt.executedBy?.processId ? h('button.regenerate-answer-only', {
            type: 'button',
            title: 'Reuse the earlier steps of its run; write only the answer again',
            onclick: act(() => post(`/v1/turns/${turn.id}/alternatives`, {
              processId: alt.executedBy.processId, regenerate: { alternativeId: alt.id },
            })),
          }, 'The answer only (reuse its run’s steps)') : null));
      actions.push(menu);
    }
    if (text && alt.cacheStatus !== altStatus.generating) {
      const copy = h('button.copy-message', { type: 'button', title: 'Copy the message’s text' }, 'Copy');
      copy.addEventListener('click', () => copyText(alt.content || '', copy.closest('li.turn')?.querySelector('.content') || copy, copy));
      actions.push(copy);
    }
    if (!isLast) {
      actions.push(h('button.reply-here', {
        type: 'button',
        title: 'Send a new message from here: a branch beside the rest of the thread',
        onclick: () => { state.replyTo = turn.id; reload(); },
      }, 'Continue from here'));
    }
    if (alt.cacheStatus !== altStatus.generating) {
      actions.push(h('button.fork', {
        type: 'button',
        title: 'A new conversation with the thread up to this message',
        onclick: async () => {
          try {
            const c = await post(`/v1/conversations/${id}/fork`, { turnId: turn.id, alternativeId: alt.id });
            location.hash = `#/c/${c.id}`;
          } catch (err) { showError(err); }
        },
      }, 'Fork'));
    }
    const onkeydown = (e) => {
      if (e.target.closest('textarea, input, select')) return;
      const nav = e.currentTarget.querySelector(e.key === 'ArrowLeft' ? 'button.prev' : 'button.next');
      if ((e.key === 'ArrowLeft' || e.key === 'ArrowRight') && nav && !nav.disabled) { e.preventDefault(); nav.click(); }
    };
    return h(`li.turn.${turn.speaker}${alt.id === state.linked ? '.linked' : ''}`, {
      dataset: { turnId: turn.id, altId: alt.id, status: alt.cacheStatus },
      tabindex: 0,
      'aria-label': `${speakerName[turn.speaker] || turn.speaker}, turn ${turn.sequence}`,
      onkeydown,
    },
    h('div.turn-head', h('strong', speakerName[turn.speaker] || turn.speaker), ' ', versionNav(turn, alt, next), ' ', status),
    body,
    h('div.meta',
      alt.executedBy ? `${nameOf(alt.executedBy.processId)} · ` : '',
      alt.runId ? h('a.run-link', { href: `#/runs/${alt.runId}` }, 'View run') : null,
      alt.runId ? ' · ' : '', when(alt.createdAt)),
    actions.length ? h('div.actions', actions) : null);
  }

  /** When the linked Alternative is not on the thread shown (another version of its Turn), a
   * way to it; when it is not in this conversation at all, a sentence saying so. */
  function linkedNote(tree) {
    if (!state.linked) return null;
    const altById = new Map(tree.turns.flatMap((t) => t.alternatives.map((a) => [a.id, a])));
    const alt = altById.get(state.linked);
    if (!alt) return h('p.note.linked-note', 'The linked message is not in this conversation.');
    const shown = threadOf(tree.turns, tree.conversation.currentAlternativeId).some((t) => activeOf(t).id === alt.id);
    if (shown) return null;
    return h('p.note.linked-note', `The linked message is version ${alt.sequence} of its turn, not the one shown. `,
      h('button.show-linked', { type: 'button', onclick: act(() => goTo(alt, altById)) }, 'Show it'));
  }

  const nameOf = (pid) => state.processes.find((p) => p.id === pid)?.name || pid;

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
      h('h3', 'Recalled'),
      (m.retrievedContext || []).length
        ? h('ul.recalled', m.retrievedContext.map((r) => h('li', r.text.slice(0, 200),
          h('span.muted', ` (${r.kind}, similarity ${r.score.toFixed(2)}, ${r.tokens} tokens`,
            r.source?.conversationId && r.source.conversationId !== id
              ? [', from ', h('a', { href: `#/c/${encodeURIComponent(r.source.conversationId)}` }, r.source.conversationTitle || 'another conversation')]
              : null, ')'))))
        : h('p.muted', 'Nothing similar from your other conversations'),
      h('h3', 'Notes to self'),
      (m.introspectionContext || []).length
        ? h('ol.notes', m.introspectionContext.map((n) => h('li', n.content.slice(0, 200),
          h('span.muted', ` (position ${n.carouselPosition}, ${n.tokens} tokens)`))))
        : h('p.muted', 'None'));
  }

  // Makes an Alternative and every Alternative it answers active, root first, so the thread
  // then runs through it.
  async function goTo(alt, altById, moveThread = false) {
    const chain = [];
    for (let a = alt; a; a = a.respondsTo ? altById.get(a.respondsTo) : null) chain.unshift(a);
    for (const a of chain) {
      if (!a.isActive || (moveThread && a === alt)) await put(`/v1/turns/${a.turnId}/active`, { alternativeId: a.id });
    }
  }

  /** A Turn's text in the branch map: its first words, quoted. */
  const snippet = (text, status) => {
    const t = (text || '').replace(/\s+/g, ' ').trim();
    if (!t) return `(${status || 'empty'})`;
    return `“${t.length > 48 ? `${t.slice(0, 48)}…` : t}”`;
  };

  /** The whole tree: each Turn with its versions, the active path marked, stale versions and
   * forks shown; choosing a version moves the thread there. */
  function branchMap(turns, thread) {
    const onPath = new Set(thread.map((t) => activeOf(t).id));
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
      return h('ul', list.map((t) => h('li.map-turn', { dataset: { onPath: t.alternatives.some((a) => onPath.has(a.id)) ? 'yes' : 'no' } },
        h('span.muted', `${speakerName[t.speaker] || t.speaker} · turn ${t.sequence} `),
        h('span.map-text', { title: activeOf(t).content || '' }, snippet(activeOf(t).content, activeOf(t).cacheStatus)), ' ',
        [...t.alternatives].sort((a, b) => a.sequence - b.sequence).map((a) => h('button.map-alt', {
          type: 'button',
          'aria-pressed': a.isActive ? 'true' : 'false',
          title: (a.content || a.cacheStatus).slice(0, 120),
          onclick: act(() => goTo(a, altById)),
        }, `v${a.sequence}${a.isActive ? ' (active)' : ''}${a.cacheStatus === altStatus.stale ? ' stale' : ''}`)),
        state.forks.filter((f) => f.forkedFrom.originTurnId === t.id).map((f) => h('a.map-fork',
          { href: `#/c/${f.id}`, title: 'A conversation forked from here' }, ` ⑂ ${f.title || 'fork'}`)),
        branch(t.id))));
    };
    return h('details.branch-map', {
      open: state.mapOpen,
      ontoggle: (e) => { state.mapOpen = e.currentTarget.open; },
    }, h('summary', `Branch map (${turns.length} turns)`), branch(''));
  }

  // The message being sent, drawn at once in the thread until the server's Turn replaces it.
  const pendingItem = (content) => h('li.turn.user.pending', {
    dataset: { status: 'sending' }, 'aria-label': 'You, sending',
  }, h('div.turn-head', h('strong', 'You'), ' ', h('span.note.sending', 'sending…')), h('div.content', content));

  function render(tree, memory) {
    state.last = { tree, memory };
    state.turns = tree.turns;
    const conv = tree.conversation;
    document.title = `${conv.title || 'Untitled conversation'} · Aiden`;
    let thread = threadOf(tree.turns, conv.currentAlternativeId);
    const byId = new Map(tree.turns.map((t) => [t.id, t]));
    const parent = (state.replyTo && byId.get(state.replyTo)) || thread[thread.length - 1] || null;
    // A message sent from the middle of the thread starts a branch there: nothing below it shows.
    if (state.pending?.parentId) {
      const at = thread.findIndex((t) => t.id === state.pending.parentId);
      if (at >= 0) thread = thread.slice(0, at + 1);
    }
    const sending = Boolean(state.pending);
    const rename = h('input#conv-title', { value: conv.title || '', maxlength: 500 });
    const message = h('textarea#message', {
      rows: 3, required: true, placeholder: 'Write a message', oninput: (e) => { state.draft = e.target.value; },
    });
    message.value = state.draft;
    message.disabled = sending;
    message.addEventListener('keydown', (e) => {
      // Enter sends; Shift+Enter is a new line.
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); e.currentTarget.form.requestSubmit(); }
    });
    const answerWith = processSelect(defaultPick(conv), 'Process to answer with');
    const last = thread[thread.length - 1];
    const unanswered = last && last.speaker !== 'agent' && !state.replyTo;
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
        conv.forkedFrom ? h('p.muted', 'Forked from ', h('a', { href: `#/c/${conv.forkedFrom.conversationId}` }, 'another conversation')) : null,
        neo4jLink(lineageQuery.conversation(id))),
      linkedNote(tree),
      h('div.split',
        h('section.thread-wrap',
          tree.turns.length > 1 ? branchMap(tree.turns, thread) : null,
          h('ol.thread', { 'aria-label': 'Conversation' }, thread.map((t, i) => turnItem(t, thread[i + 1], conv)),
            sending ? pendingItem(state.pending.content) : null),
          state.replyTo && parent ? h('p.replying', `Continuing from turn ${parent.sequence}. `,
            h('button', { type: 'button', onclick: () => { state.replyTo = null; reload(); } }, 'Continue at the end instead')) : null,
          h('form.composer', {
            'aria-busy': sending ? 'true' : null,
            // Send posts the message and starts its answer with the chosen Process. The message
            // shows at once and the composer waits for the answer to start, so a second Enter
            // (or click) cannot send it twice.
            onsubmit: async (e) => {
              e.preventDefault();
              if (state.pending || !message.value.trim()) return;
              const content = message.value;
              const processId = answerWith.value;
              // Where "Continue from here" points now: it may have been chosen after this
              // composer was drawn (the page draws again once it has looked).
              const parent = (state.replyTo && byId.get(state.replyTo)) || thread[thread.length - 1] || null;
              state.pending = { content, parentId: state.replyTo && parent ? parent.id : null };
              state.stick = true;
              render(state.last.tree, state.last.memory);
              toLatest();
              let posted = false;
              try {
                const body = { speaker: 'user', content };
                if (parent) body.parentTurnId = parent.id;
                const turn = await post(`/v1/conversations/${id}/turns`, body);
                posted = true;
                state.replyTo = null;
                state.draft = '';
                if (processId) {
                  await post(`/v1/conversations/${id}/agent-turns`, { processId, parentTurnId: turn.id });
                }
              } catch (err) {
                showError(err);
              } finally {
                state.pending = null;
                state.focus = '#message';
                state.stick = true;
                // Not sent: the draft is still in the composer; sent: the server's Turn replaces it.
                if (posted) await reload();
                else if (!state.left) { render(state.last.tree, state.last.memory); view.querySelector('#message')?.focus(); }
              }
            },
          },
          h('label', { for: 'message' }, 'Message'), message,
          h('div.actions',
            state.processes.length
              ? [h('label.muted', 'Answer with '), answerWith,
                h('button.make-default', {
                  type: 'button',
                  title: 'Use this Process for your new conversations',
                  onclick: act(async () => {
                    session.me = await put('/v1/me/default-process', { processId: answerWith.value });
                  }),
                }, 'Make my default')]
              : h('span.muted', 'Nothing can answer for you yet. ', h('a', { href: '#/connect' }, 'Connect a model')),
            h('button#send', { type: 'submit', disabled: sending }, sending ? 'Sending…' : 'Send'),
            unanswered && state.processes.length ? h('button#ask', {
              type: 'button',
              onclick: act(() => answer(last, null, answerWith.value)),
            }, 'Answer') : null))),
        session.me?.role === 'admin' ? memoryPanel(memory) : null),
      jump);
  }

  await reload(true);
}
