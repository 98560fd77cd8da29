// Memories in the console (SRCH-4): what the signed-in user asked the assistant to keep, in any
// conversation ("/remember …" with a memory-keeping assistant) or here. Each can be forgotten;
// a forgotten memory is found by nothing any more.

import { api, get, post } from './api.js';
import { badge, h, mount, when } from './dom.js';

function memoryItem(m, refresh) {
  const forget = h('button.forget', {
    type: 'button',
    title: 'Forget this memory: search and the assistant no longer find it',
    onclick: async () => {
      forget.disabled = true;
      await api('DELETE', `/v1/memories/${encodeURIComponent(m.id)}`);
      refresh();
    },
  }, 'Forget');
  const from = m.conversationId
    ? ['kept in ', h('a', { href: `#/c/${encodeURIComponent(m.conversationId)}` }, 'a conversation')]
    : 'added here';
  return h('li.memory', { dataset: { id: m.id } },
    h('p.memory-text', m.content),
    h('p.muted', from, ' · ', when(m.createdAt), ' ',
      m.embedded ? null : badge('words only', 'Not embedded yet: found by its words until it is'), ' ',
      forget));
}

export async function memoriesPage(view) {
  const page = await get('/v1/memories');
  const refresh = () => memoriesPage(view);
  const input = h('textarea#memory-new', {
    rows: 2, maxlength: 2000, required: true, placeholder: 'Something to remember, e.g. "I am allergic to peanuts"',
  });
  const form = h('form#remember', {
    onsubmit: async (e) => {
      e.preventDefault();
      const content = input.value.trim();
      if (!content) return;
      await post('/v1/memories', { content });
      refresh();
    },
  }, h('label', { for: 'memory-new' }, 'Remember '), input, ' ', h('button', { type: 'submit' }, 'Remember'));
  mount(view, h('h1', 'Memories'),
    h('p.muted', 'What you asked to be remembered. The assistant recalls these in any of your conversations; nobody else sees them.'),
    form,
    page.items.length
      ? h('ul#memories.memories', page.items.map((m) => memoryItem(m, refresh)))
      : h('p#no-memories', 'Nothing remembered yet. Say "/remember …" to an assistant with memory, or add one here.'));
  input.focus();
}
