// The console's shell: sign-in (a name and a password, or a bearer token kept in session storage
// only), navigation, and a hash router, so `aiden serve` answers every page with the same `/` and
// the API does the rest.

import { ApiError, get, post, put, restoreSession, session, signInWithPassword, signOut } from './api.js';
import { usersPage } from './users.js';
import { h, mount } from './dom.js';
import { conversationList, conversationPage } from './conversations.js';
import { diffPage, runPage } from './runs.js';
import { runList } from './runlist.js';
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
  [/^#\/users(\?.*)?$/, (v) => usersPage(v, { showError })],
  [/^#\/account/, (v) => accountPage(v)],
];

function notFound(view, what) {
  mount(view, h('h1', 'Not found'),
    h('p', what || 'There is nothing at this address, or it is not shared with you.'),
    h('p', h('a', { href: '#/' }, 'Back to conversations')));
}

// Signed out: a name and a password (people), or an API token (programs, and the bootstrap
// admin, who has no password until they set one).
function signIn(message, mode = 'password') {
  nav.hidden = true;
  document.title = 'Sign in · Aiden';
  const main = viewEl();
  const failed = (err, what) => (err instanceof ApiError && err.status === 401
    ? (err.code === 'RATE_LIMITED' ? 'Too many attempts. Wait a minute and try again.' : what)
    : `Sign-in failed: ${explain(err)}`);
  const after = () => { session.me = null; route(); };
  if (mode === 'token') {
    const token = h('input#token', { type: 'password', autocomplete: 'off', required: true });
    mount(main,
      h('h1', 'Sign in to Aiden'),
      h('form#sign-in', {
        onsubmit: async (e) => {
          e.preventDefault();
          session.csrf = null;
          session.token = token.value.trim();
          try {
            session.me = await get('/v1/me');
            route();
          } catch (err) {
            session.token = null;
            signIn(failed(err, 'That token was not accepted. Check it and try again.'), 'token');
          }
        },
      },
      h('label', { for: 'token' }, 'API token'), token,
      h('button', { type: 'submit' }, 'Sign in')),
      message ? h('p#sign-in-error.error', { role: 'alert' }, message) : null,
      h('p.muted', 'The token stays in this tab (session storage) and is sent only as the Authorization header.'),
      h('p', h('button#use-password.linkish', { type: 'button', onclick: () => signIn() }, 'Sign in with a name and password instead')));
    token.focus();
    return;
  }
  const name = h('input#name', { name: 'username', autocomplete: 'username', required: true });
  const password = h('input#password', { type: 'password', autocomplete: 'current-password', required: true });
  mount(main,
    h('h1', 'Sign in to Aiden'),
    h('form#sign-in.stacked', {
      onsubmit: async (e) => {
        e.preventDefault();
        const button = e.submitter;
        if (button) button.disabled = true;
        try {
          await signInWithPassword(name.value.trim(), password.value);
          after();
        } catch (err) {
          signIn(failed(err, 'That name and password were not accepted. Check them and try again.'));
        }
      },
    },
    h('label', { for: 'name' }, 'Name'), name,
    h('label', { for: 'password' }, 'Password'), password,
    h('button', { type: 'submit' }, 'Sign in')),
    message ? h('p#sign-in-error.error', { role: 'alert' }, message) : null,
    h('p.muted', 'No password yet? Ask an admin for a password link.'),
    h('p', h('button#use-token.linkish', { type: 'button', onclick: () => signIn(null, 'token') }, 'Sign in with an API token instead')));
  name.focus();
}

/** Two password fields that must agree and be 10–256 characters (USR-5). */
function passwordFields() {
  const first = h('input#new-password', { type: 'password', autocomplete: 'new-password', required: true, minlength: 10, maxlength: 256 });
  const again = h('input#new-password-again', { type: 'password', autocomplete: 'new-password', required: true, minlength: 10, maxlength: 256 });
  const check = () => {
    again.setCustomValidity(first.value === again.value ? '' : 'The two passwords differ.');
    return first.value === again.value;
  };
  first.addEventListener('input', check);
  again.addEventListener('input', check);
  return {
    fields: [h('label', { for: 'new-password' }, 'New password (10 to 256 characters)'), first,
      h('label', { for: 'new-password-again' }, 'The same again'), again],
    value: () => first.value,
    check,
    focus: () => first.focus(),
  };
}

// `#/password?token=…`: a one-time link from an admin sets a password (no sign-in needed).
function passwordLinkPage(view) {
  nav.hidden = !session.me;
  document.title = 'Set a password · Aiden';
  const token = new URLSearchParams(location.hash.split('?')[1] || '').get('token') || '';
  const pw = passwordFields();
  const note = h('div#password-result');
  if (!token) {
    mount(view, h('h1', 'Set a password'), h('p.error', 'This link has no token. Ask an admin for a new link.'));
    return;
  }
  mount(view,
    h('h1', 'Set a password'),
    h('p.muted', 'Choose the password you will sign in with. The link works once.'),
    h('form#set-password.stacked', {
      onsubmit: async (e) => {
        e.preventDefault();
        if (!pw.check()) return;
        const button = e.submitter;
        if (button) button.disabled = true;
        try {
          await post('/v1/password', { token, password: pw.value() });
          // The token is spent: keep it out of the history and the address bar.
          history.replaceState(null, '', `${location.pathname}#/`);
          session.token = null;
          session.csrf = null;
          session.me = null;
          signIn();
          mount(errors, h('p#password-set.notice', { role: 'status' }, 'Your password is set. Sign in with your name and the new password.'));
        } catch (err) {
          if (button) button.disabled = false;
          const why = err instanceof ApiError && err.status === 401
            ? 'This link is unknown, used or expired. Ask an admin for a new one.' : explain(err);
          mount(note, h('p.error', { role: 'alert' }, why));
        }
      },
    }, pw.fields, h('button', { type: 'submit' }, 'Set password')),
    note);
  pw.focus();
}

// The signed-in user's own password (PUT /v1/users/{me}/password); their other sessions end.
function accountPage(view) {
  document.title = 'Your account · Aiden';
  const pw = passwordFields();
  const note = h('div#password-result');
  mount(view,
    h('h1', 'Your account'),
    h('p', `Signed in as ${session.me.name} (${session.me.role}), `,
      session.mode === 'session' ? 'with your password.' : 'with an API token.'),
    h('h2', 'Set a password'),
    h('p.muted', 'You sign in to the console with your name and this password. Your other sessions end.'),
    h('form#own-password.stacked', {
      onsubmit: async (e) => {
        e.preventDefault();
        if (!pw.check()) return;
        const button = e.submitter;
        if (button) button.disabled = true;
        try {
          await put(`/v1/users/${encodeURIComponent(session.me.id)}/password`, { password: pw.value() });
          e.target.reset();
          mount(note, h('p.notice', { role: 'status' }, 'Your password is set.'));
        } catch (err) {
          mount(note, h('p.error', { role: 'alert' }, explain(err)));
        } finally { if (button) button.disabled = false; }
      },
    }, pw.fields, h('button', { type: 'submit' }, 'Set password')),
    note);
}

async function signOutNow() {
  try { await signOut(); } catch { /* signed out here either way */ }
  route();
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
    session.me.role === 'admin' ? link('#/users', 'Users', (x) => x.startsWith('#/users')) : null,
    link('#/connect', 'Connect a model', (x) => x.startsWith('#/connect')),
    h('details#account-menu.account',
      h('summary.who', `${session.me.name} (${session.me.role})`),
      h('div.account-items',
        h('a#set-password-link', { href: '#/account' }, 'Set a password'),
        h('button#sign-out', { type: 'button', onclick: signOutNow }, 'Sign out'))));
}

async function route() {
  if (location.hash === '#main') return undefined; // the skip link, not a page
  const old = viewEl();
  old.dispatchEvent(new Event('console:leave'));
  const view = old.cloneNode(false);
  old.replaceWith(view);
  mount(errors);
  document.title = 'Aiden console';
  // A password link works signed out (and signed in: it is someone's first password).
  if (/^#\/password(\?|$)/.test(location.hash)) return passwordLinkPage(view);
  try {
    // A new tab, or a reload: the session cookie, if there is one, signs this tab in.
    if (!session.mode && !(await restoreSession())) return signIn();
    if (!session.me) session.me = await get('/v1/me');
    // The pages compare statuses with the API's own words.
    await loadStatuses();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      const wasToken = session.mode === 'token';
      session.token = null;
      session.csrf = null;
      session.me = null;
      return wasToken ? signIn('Your token is no longer accepted. Sign in again.', 'token')
        : signIn('Your session has ended. Sign in again.');
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
  if (!session.mode || !session.me || /^#\/password/.test(location.hash)) return;
  const wasToken = session.mode === 'token';
  session.token = null;
  session.csrf = null;
  session.me = null;
  viewEl().dispatchEvent(new Event('console:leave'));
  if (wasToken) signIn('Your token is no longer accepted. Sign in again.', 'token');
  else signIn('Your session has ended. Sign in again.');
});
route();
