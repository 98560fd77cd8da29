// The console's shell: sign-in with a bearer token (session storage only), navigation, and a
// hash router, so `aiden serve` answers every page with the same `/` and the API does the rest.

import { ApiError, get, session } from './api.js';
import { h, mount } from './dom.js';
import { conversationList, conversationPage } from './conversations.js';
import { diffPage, runList, runPage } from './runs.js';
import { processList, processPage, serviceList, toolList, workerList } from './catalog.js';
import { connectPage } from './connect.js';
import { entityPage, searchPage } from './knowledge.js';
import { memoriesPage } from './memories.js';
import { loadStatuses } from './statuses.js';
import { explain } from './words.js';

// The page's view element; each route swaps in a fresh one, so a page left behind (its SSE
// streams, its timers) cannot draw into the next.
const viewEl = () => document.getElementById('main');
const nav = document.getElementById('nav');
const errors = document.getElementById('errors');

function showError(err) {
  mount(errors, h('p.error', { role: 'alert' }, explain(err),
    ' ', h('button', { type: 'button', onclick: () => mount(errors) }, 'Dismiss')));
}

const routes = [
  [/^#?\/?(\?.*)?$/, (v) => conversationList(v, { showError })],
  [/^#\/c\/([^/?]+)/, (v, id) => conversationPage(v, id, { showError })],
  [/^#\/runs(\?.*)?$/, (v) => runList(v)],
  // Before a run's own page, whose pattern would take `<a>/diff/<b>` as run `<a>`.
  [/^#\/runs\/([^/?]+)\/diff\/([^/?]+)/, (v, a, b) => diffPage(v, a, b)],
  [/^#\/runs\/([^/?]+)/, (v, id) => runPage(v, id, { showError })],
  [/^#\/processes(\?.*)?$/, (v) => processList(v)],
  [/^#\/processes\/([^/?]+)/, (v, id) => processPage(v, id)],
  [/^#\/tools/, (v) => toolList(v)],
  [/^#\/services/, (v) => serviceList(v, { showError })],
  [/^#\/workers/, (v) => workerList(v)],
  [/^#\/connect/, (v) => connectPage(v, { showError })],
  [/^#\/search/, (v) => searchPage(v)],
  [/^#\/memories/, (v) => memoriesPage(v)],
  [/^#\/entities\/([^/?]+)/, (v, id) => entityPage(v, id)],
];

function notFound(view, what) {
  mount(view, h('h1', 'Not found'),
    h('p', what || 'There is nothing at this address, or it is not shared with you.'),
    h('p', h('a', { href: '#/' }, 'Back to conversations')));
}

function signIn(message) {
  nav.hidden = true;
  const main = viewEl();
  const token = h('input#token', { type: 'password', autocomplete: 'off', required: true });
  mount(main,
    h('h1', 'Sign in to Aiden'),
    h('form#sign-in', {
      onsubmit: async (e) => {
        e.preventDefault();
        session.token = token.value.trim();
        try {
          session.me = await get('/v1/me');
          route();
        } catch (err) {
          session.token = null;
          const why = err instanceof ApiError && err.status === 401
            ? 'That token was not accepted. Check it and try again.' : `Sign-in failed: ${err.message}`;
          signIn(why);
        }
      },
    },
    h('label', { for: 'token' }, 'API token'), token,
    h('button', { type: 'submit' }, 'Sign in')),
    message ? h('p#sign-in-error.error', { role: 'alert' }, message) : null,
    h('p.muted', 'The token stays in this tab (session storage) and is sent only as the Authorization header.'));
  token.focus();
}

function renderNav() {
  nav.hidden = false;
  const here = location.hash || '#/';
  const link = (href, text, match) => h('a', { href, 'aria-current': match(here) ? 'page' : null }, text);
  nav.classList.remove('open');
  mount(nav,
    h('span.brand', 'Aiden'),
    h('button.menu-toggle', {
      type: 'button', 'aria-expanded': 'false',
      onclick: (e) => { const open = nav.classList.toggle('open'); e.currentTarget.setAttribute('aria-expanded', String(open)); },
    }, 'Menu'),
    link('#/', 'Conversations', (x) => x === '#/' || x.startsWith('#/c/') || x.startsWith('#/?')),
    link('#/search', 'Search', (x) => x.startsWith('#/search') || x.startsWith('#/entities')),
    link('#/memories', 'Memories', (x) => x.startsWith('#/memories')),
    link('#/runs', 'Runs', (x) => x.startsWith('#/runs')),
    link('#/processes', 'Processes', (x) => x.startsWith('#/processes')),
    link('#/tools', 'Tools', (x) => x.startsWith('#/tools')),
    link('#/services', 'Services', (x) => x.startsWith('#/services')),
    session.me.role === 'admin' ? link('#/workers', 'Workers', (x) => x.startsWith('#/workers')) : null,
    link('#/connect', 'Connect a model', (x) => x.startsWith('#/connect')),
    h('span.who', `${session.me.name} (${session.me.role})`),
    h('button#sign-out', { type: 'button', onclick: () => { session.token = null; session.me = null; route(); } }, 'Sign out'));
}

async function route() {
  if (location.hash === '#main') return undefined; // the skip link, not a page
  const old = viewEl();
  old.dispatchEvent(new Event('console:leave'));
  const view = old.cloneNode(false);
  old.replaceWith(view);
  mount(errors);
  if (!session.token) return signIn();
  try {
    if (!session.me) session.me = await get('/v1/me');
    // The pages compare statuses with the API's own words.
    await loadStatuses();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      session.token = null;
      return signIn('Your token is no longer accepted. Sign in again.');
    }
    mount(view, h('h1', 'Aiden is not answering'), h('p', err.message, ' ', h('button', { type: 'button', onclick: route }, 'Try again')));
    return undefined;
  }
  renderNav();
  const hash = location.hash || '#/';
  for (const [pattern, page] of routes) {
    const m = hash.match(pattern);
    if (!m) continue;
    mount(view, h('p.muted', 'Loading…'));
    const parts = m.slice(1).map((x) => (x && !x.startsWith('?') ? decodeURIComponent(x) : undefined));
    try { await page(view, ...parts); } catch (err) {
      if (err instanceof ApiError && err.status === 404) return notFound(view);
      mount(view, h('h1', 'Could not load this page'), h('p', explain(err)),
        h('p', h('button', { type: 'button', onclick: route }, 'Try again')));
    }
    return undefined;
  }
  notFound(view);
  return undefined;
}

window.addEventListener('hashchange', route);
// Only once signed in: sign-in and the first `/v1/me` handle their own 401.
window.addEventListener('console:unauthorized', () => {
  if (!session.token || !session.me) return;
  session.token = null;
  session.me = null;
  viewEl().dispatchEvent(new Event('console:leave'));
  signIn('Your token is no longer accepted. Sign in again.');
});
route();
