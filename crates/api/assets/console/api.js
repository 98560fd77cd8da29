// The API is the console's only way to data. A person signs in with a name and a password:
// the session lives in an HttpOnly cookie the script never sees, and every mutation echoes the
// session's CSRF token (USR-6). A program's token (or the bootstrap admin's) is kept in session
// storage (never in a URL) and sent as the Authorization header instead. Errors keep the API's
// shape so pages can show them.

const TOKEN_KEY = 'aiden.token';
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export const session = {
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  set token(t) {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
  /** The cookie session's CSRF token (memory only; a new tab asks GET /v1/sessions/current). */
  csrf: null,
  me: null,
  /** 'token', 'session', or null when signed out. */
  get mode() { return this.token ? 'token' : this.csrf ? 'session' : null; },
};

/** The headers that sign a request in: the bearer token, or the CSRF token on a mutation. */
function credentials(method) {
  if (session.token) return { Authorization: `Bearer ${session.token}` };
  if (session.csrf && !SAFE.has(method)) return { 'X-CSRF-Token': session.csrf };
  return {};
}

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    const rules = (e.details || []).map((d) => d.invariant).filter(Boolean);
    super(`${status} ${e.code || 'ERROR'}: ${e.message || 'request failed'}`
      + (rules.length ? ` (${rules.join(', ')})` : ''));
    this.status = status;
    this.code = e.code;
    this.body = body;
  }
}

export async function api(method, path, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { ...headers, ...credentials(method) } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: { message: text } }; }
  if (!res.ok) {
    // A token refused mid-session (revoked, user disabled): the shell sends the user to sign-in.
    if (res.status === 401) window.dispatchEvent(new Event('console:unauthorized'));
    throw new ApiError(res.status, data);
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body ?? {});
export const put = (path, body) => api('PUT', path, body);
export const patch = (path, body) => api('PATCH', path, body);
export const del = (path) => api('DELETE', path);

/** Signs in with a name and a password: the cookie is set, the CSRF token kept in memory. */
export async function signInWithPassword(name, password) {
  session.token = null;
  const view = await api('POST', '/v1/sessions', { name, password });
  session.csrf = view.csrfToken;
  return view;
}

/** The cookie's session, if this browser has one (a new tab, a reload); null otherwise. */
export async function restoreSession() {
  const res = await fetch('/v1/sessions/current', { credentials: 'same-origin' });
  if (res.status === 401) return null;
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const view = await res.json();
  session.csrf = view.csrfToken;
  return view;
}

/** Signs out: the session is revoked on the server, or the token forgotten in this tab. */
export async function signOut() {
  try {
    if (session.mode === 'session') await api('DELETE', '/v1/sessions/current');
  } finally {
    session.token = null;
    session.csrf = null;
    session.me = null;
  }
}

/** Every page of a list route. */
export async function all(path, max = 2000) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await get(`${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < max);
  return items;
}

/**
 * A run's Server-Sent Events. EventSource cannot send an Authorization header, so this reads
 * the stream with fetch and parses the frames. Calls onEvent(name, data) for each; resolves
 * when the stream ends. `signal` stops it.
 */
export async function runEvents(runId, onEvent, signal) {
  const res = await fetch(`/v1/runs/${encodeURIComponent(runId)}/events`, {
    headers: { ...credentials('GET'), Accept: 'text/event-stream' },
    credentials: 'same-origin',
    signal,
  });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (!data.length) continue;
      let parsed;
      try { parsed = JSON.parse(data.join('\n')); } catch { parsed = data.join('\n'); }
      onEvent(name, parsed);
    }
  }
}
