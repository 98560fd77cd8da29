// Users (admins only): a page at a time by name, found by name or id (`#/users?q=`), each with
// their role, whether they are disabled and whether a password is set, what they spent today against their daily budget (AGT-14) and how many runs
// they started (the last one linked); new users (their first token shown once), disabling,
// one-time password links for people, each user's tokens with revoke, and a link to their runs.

import { del, get, patch, post } from './api.js';
import { badge, h, mount, when } from './dom.js';
import { explain } from './words.js';

/** A value shown once, selectable, with a Copy button. */
function copyable(id, value, label) {
  const field = h(`input#${id}.copy-field`, { type: 'text', readonly: true, value, 'aria-label': label, size: Math.min(80, value.length + 2) });
  const said = h('span.muted.copied', { 'aria-live': 'polite' });
  const copy = async () => {
    field.select();
    try {
      await navigator.clipboard.writeText(value);
      said.textContent = ' Copied.';
    } catch {
      // No clipboard (an insecure origin, a refused permission): the text is selected instead.
      said.textContent = ' Selected: press Ctrl+C (⌘C) to copy.';
    }
  };
  return h('span.copyable', field, ' ', h('button.copy', { type: 'button', onclick: copy }, 'Copy'), said);
}

/** USD as people read it: cents, or down to a hundredth of a cent when smaller. */
const dollars = (n) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/** Today's spend (`usage.spentTodayUsd`), against the user's daily budget when they have one. */
function spendCell(u) {
  const usage = u.usage || {};
  const spent = usage.spentTodayUsd ?? 0;
  const budget = u.quota?.maxCostUsdPerDay;
  const title = `Spent on ${usage.day || 'today'} (UTC) by ${u.name}'s runs`;
  const data = { spentUsd: String(spent) };
  if (!budget) return h('td.spend', { title, dataset: data }, dollars(spent));
  data.budgetUsd = String(budget);
  return h('td.spend', { title, dataset: data },
    `${dollars(spent)} of ${dollars(budget)}`,
    h('br'),
    h('meter', { min: 0, max: budget, low: budget * 0.5, high: budget * 0.8, optimum: 0, value: Math.min(spent, budget),
      'aria-label': `${dollars(spent)} of the ${dollars(budget)} ${u.name} may spend a day` }),
    spent >= budget ? h('span', ' ', badge('spent', 'The daily budget is spent: new runs are refused until midnight UTC')) : null);
}

/** How many runs the user started, linked to their run list (newest first). */
function runsCell(u) {
  const n = u.usage?.runs ?? 0;
  const all = h('a.user-run-count', { href: `#/runs?owner=${encodeURIComponent(u.id)}` }, `${n} run${n === 1 ? '' : 's'}`);
  return h('td.runs', { dataset: { runs: String(n) } }, n ? all : 'none');
}

export async function usersPage(view, { showError }) {
  document.title = 'Users · Aiden';
  const notice = h('div#user-notice', { role: 'status' });
  const listSlot = h('div#user-list');
  const open = new Set(); // users whose tokens are shown

  async function passwordLink(user) {
    const link = await post(`/v1/users/${encodeURIComponent(user.id)}/password-link`, {});
    // The console answers at `/` (every page is a `#/…` route there), whatever directory the
    // API names in `path`: the link is this origin's `/` with the path's own `#/password?…`.
    const at = link.path.indexOf('#');
    const url = `${location.origin}/${at >= 0 ? link.path.slice(at) : link.path.replace(/^\//, '')}`;
    mount(notice, h('div.once.password-link', { dataset: { userId: user.id } },
      h('p', h('strong', `A password link for ${user.name}`),
        ` — it works once, until ${when(link.expiresAt)}. Send it to them; only the newest link works.`),
      copyable('password-link-url', url, `Password link for ${user.name}`)));
  }

  const act = (fn) => async (e) => {
    const button = e?.currentTarget instanceof HTMLButtonElement ? e.currentTarget : null;
    if (button) button.disabled = true;
    try { await fn(); } catch (err) { showError(err); } finally { if (button) button.disabled = false; }
  };

  async function tokensOf(user) {
    const page = await get(`/v1/users/${encodeURIComponent(user.id)}/tokens`);
    const items = Array.isArray(page) ? page : (page.items || []);
    return h('div.tokens', { dataset: { userId: user.id } },
      h('table', h('caption', `Tokens of ${user.name}`),
        h('thead', h('tr', ['Token', 'Name', 'Created', 'State', ''].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', items.length ? items.map((t) => h('tr.token', { dataset: { tokenId: t.id } },
          h('td', h('code', t.id)), h('td', t.name || '—'), h('td', when(t.createdAt)),
          h('td', t.revokedAt ? badge('revoked', `revoked ${when(t.revokedAt)}`) : t.bootstrap ? 'bootstrap' : 'live'),
          h('td', t.revokedAt || t.bootstrap ? null : h('button.revoke', {
            type: 'button',
            onclick: act(async () => {
              if (!window.confirm(`Revoke token ${t.id} of ${user.name}? Programs using it stop working.`)) return;
              await del(`/v1/users/${encodeURIComponent(user.id)}/tokens/${encodeURIComponent(t.id)}`);
              await redraw(user);
            }),
          }, 'Revoke'))))
          : h('tr', h('td', { colspan: 5 }, 'No tokens.')))));
  }

  const shown = new Map(); // user id -> { row, extra }: their line, and their tokens when open
  let filter = new URLSearchParams(location.hash.split('?')[1] || '').get('q') || '';
  let cursor = null; // the next page's, when there is one
  let count = 0;
  let drawn = 0; // how many times the first page was asked for
  const more = h('button#users-more', { type: 'button', hidden: true }, 'More users');
  const caption = h('caption');
  const body = h('tbody');

  /** A user's line, and under it their tokens when they are open. */
  async function linesOf(u) {
    const row = h('tr.user', { dataset: { userId: u.id, disabled: u.disabled ? 'yes' : 'no' } },
      h('td', h('strong.user-name', u.name), h('br'), h('code.muted', u.id)),
      h('td', u.role),
      h('td.state', u.disabled ? badge('disabled') : 'active'),
      h('td.has-password', u.hasPassword ? 'set' : 'not set'),
      spendCell(u),
      runsCell(u),
      h('td', when(u.createdAt)),
      h('td', h('div.actions',
        h('button.toggle-disabled', {
          type: 'button',
          onclick: act(async () => {
            const changed = await patch(`/v1/users/${encodeURIComponent(u.id)}`, { disabled: !u.disabled });
            u.disabled = changed.disabled;
            await redraw(u);
          }),
        }, u.disabled ? 'Enable' : 'Disable'),
        h('button.password-link', { type: 'button', onclick: act(() => passwordLink(u)) }, 'Password link'),
        h('button.show-tokens', {
          type: 'button',
          'aria-expanded': open.has(u.id) ? 'true' : 'false',
          onclick: act(async () => {
            if (open.has(u.id)) open.delete(u.id); else open.add(u.id);
            await redraw(u);
          }),
        }, open.has(u.id) ? 'Hide tokens' : 'Tokens'),
        h('a.user-runs', { href: `#/runs?owner=${encodeURIComponent(u.id)}` }, 'Runs'))));
    const extra = open.has(u.id) ? h('tr.user-tokens', h('td', { colspan: 8 }, await tokensOf(u))) : null;
    return { row, extra };
  }

  /** Puts a user's lines in place of their old ones, or first (`atTop`) or last. */
  function place(u, lines, atTop = false) {
    const old = shown.get(u.id);
    if (old) {
      old.row.replaceWith(lines.row);
      old.extra?.remove();
    } else if (atTop) body.prepend(lines.row);
    else body.append(lines.row);
    if (lines.extra) lines.row.after(lines.extra);
    shown.set(u.id, lines);
  }

  /** Draws one user's lines again after a change to them; the rest of the table stays. */
  async function redraw(u) {
    place(u, await linesOf(u));
  }

  const said = () => {
    const n = `${count}${cursor ? '+' : ''} user${count === 1 && !cursor ? '' : 's'}`;
    caption.textContent = filter ? `${n} whose name contains or id starts with “${filter}”` : `${n}, by name`;
  };

  /** A user just created, first in the table, without reading the list again. */
  async function add(u) {
    body.querySelector('tr.none')?.remove();
    place(u, await linesOf(u), true);
    count += 1;
    said();
  }

  /** A page of users (50, by name) after `after`, narrowed by the filter. */
  async function page(after) {
    const asked = drawn;
    const q = new URLSearchParams({ limit: '50' });
    if (filter) q.set('q', filter);
    if (after) q.set('cursor', after);
    const got = await get(`/v1/users?${q}`);
    const lines = await Promise.all(got.items.map(linesOf));
    if (asked !== drawn) return; // the filter changed meanwhile: a newer draw owns the table
    got.items.forEach((u, i) => place(u, lines[i]));
    count += got.items.length;
    cursor = got.nextCursor;
    more.hidden = !cursor;
    if (!count) mount(body, h('tr.none', h('td', { colspan: 8 }, filter ? 'No user matches.' : 'No users.')));
    said();
  }

  /** The first page again (after the filter changed). */
  async function draw() {
    drawn += 1;
    shown.clear();
    body.replaceChildren();
    count = 0;
    await page(null);
  }
  more.addEventListener('click', act(() => page(cursor)));

  const find = h('input#user-q', {
    type: 'search', value: filter, placeholder: 'Name or id', 'aria-label': 'Find a user by name or id', autocomplete: 'off',
  });
  const finder = h('form#user-filter.inline', {
    role: 'search',
    onsubmit: async (e) => {
      e.preventDefault();
      filter = find.value.trim();
      // The address keeps the filter (a reload or a link shows the same users) without the
      // router drawing the page again.
      history.replaceState(null, '', filter ? `#/users?q=${encodeURIComponent(filter)}` : '#/users');
      try { await draw(); } catch (err) { showError(err); }
    },
  }, find, h('button', { type: 'submit' }, 'Find'));

  const name = h('input#new-user-name', { required: true, maxlength: 200, autocomplete: 'off' });
  const role = h('select#new-user-role', h('option', { value: 'user' }, 'user'), h('option', { value: 'admin' }, 'admin'));
  const form = h('form#create-user.inline', {
    onsubmit: async (e) => {
      e.preventDefault();
      const button = e.submitter;
      if (button) button.disabled = true;
      try {
        const user = await post('/v1/users', { name: name.value.trim(), role: role.value });
        form.reset();
        mount(notice, h('div.once.new-user', { dataset: { userId: user.id } },
          h('p', h('strong', `${user.name} is created.`),
            ' Their API token is shown only this once: copy it now if a program will use it.'),
          copyable('new-user-token', user.token || '', `API token of ${user.name}`),
          h('p', 'A person signs in with a password: ',
            h('button#new-user-link', { type: 'button', onclick: act(() => passwordLink(user)) }, 'Make a password link'))));
        const { token: _shown, tokenId: _id, ...listed } = user;
        await add(listed);
      } catch (err) {
        mount(notice, h('p.error', { role: 'alert' }, explain(err)));
      } finally { if (button) button.disabled = false; }
    },
  },
  h('label', { for: 'new-user-name' }, 'Name'), name,
  h('label', { for: 'new-user-role' }, 'Role'), role,
  h('button', { type: 'submit' }, 'Create user'));

  mount(listSlot, h('div.table-wrap', h('table#users', caption,
    h('thead', h('tr', ['User', 'Role', 'State', 'Password', 'Spent today', 'Runs', 'Created', ''].map((x) => h('th', { scope: 'col' }, x)))),
    body)), more);
  await draw();
  mount(view,
    h('h1', 'Users'),
    h('h2', 'New user'),
    form,
    notice,
    h('h2', 'Everyone'),
    finder,
    listSlot);
}
