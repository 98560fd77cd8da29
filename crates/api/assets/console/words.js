// Words for people: an API error or a failed answer as one sentence that says what happened and
// what to do, with the code and the API's own message behind a "details" toggle.

import { ApiError } from './api.js';
import { h } from './dom.js';

const byStatus = {
  400: 'That request was not understood.',
  401: 'Your sign-in is no longer accepted. Sign in again.',
  403: 'You are not allowed to do that.',
  404: 'That does not exist, or it is not shared with you.',
  409: 'Someone changed this at the same time. Reload and try again.',
  413: 'That is too large to send.',
  422: 'That was not accepted.',
  429: 'Too many requests right now. Wait a moment and try again.',
  503: 'Aiden is busy or starting up. Try again in a moment.',
};

const byCode = {
  TIMEOUT: 'The model took too long to answer.',
  CONNECTION_ERROR: 'The model could not be reached.',
  RATE_LIMITED: 'The model is rate-limiting requests right now.',
  AUTH_ERROR: 'The model refused the key it was given.',
  UPSTREAM_ERROR: 'The model answered with an error.',
  INVALID_REQUEST: 'The model did not accept the request.',
  MODEL_ERROR: 'The model could not give an answer. Retry, or open the run to see why.',
  STEP_FAILED: 'A step of the answer failed: View run shows which, and why.',
  CANCELED: 'The answer was cancelled.',
  'PROC-8': 'A Tool or Service it needs is disabled or down. An admin can check it again on the Services page.',
};

/** A step refused because a model key is someone else's (SEC-6): connecting one's own helps. */
const needsConnection = (err) => err?.code === 'PERMISSION_DENIED' && /Connect a model/.test(err?.message || '');

/** One sentence for an error from the API or a failed run. */
export function sentence(err) {
  if (err instanceof ApiError) {
    const first = err.body?.error?.details?.[0]?.message;
    const base = byStatus[err.status] || 'Something went wrong.';
    return err.status === 422 && first ? `${base} ${first[0].toUpperCase()}${first.slice(1)}.` : base;
  }
  if (needsConnection(err)) return 'This needs your own model key.';
  if (err?.code === 'PERMISSION_DENIED') return 'This uses credentials that belong to someone else.';
  if (err && typeof err === 'object' && err.code) return byCode[err.code] || 'The answer failed.';
  return err instanceof Error ? err.message : String(err);
}

/** The sentence, a link when there is something to do, and the details behind a toggle. */
export function explain(err) {
  const code = err instanceof ApiError ? err.code : err?.code;
  const raw = err instanceof ApiError ? err.message : `${err?.code || ''}: ${err?.message || JSON.stringify(err)}`;
  return h('span.explained',
    sentence(err), ' ',
    needsConnection(err) ? h('a.connect-link', { href: '#/connect' }, 'Connect a model') : null,
    h('details.error-details', h('summary', 'Details'), h('code', raw)));
}
