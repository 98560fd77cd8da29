// "Connect a model": a user brings their own key for a shared model Service. The console makes
// the user's Secret and, for every shared Tool on that Service that is made from a ToolTemplate,
// the user's own Tool of the same template with that Secret. Shared Processes that name those
// Tools then run on the user's own for their runs (docs/connections.md). Secrets stay
// owner-only (SEC-6): nobody else's key is ever used for this user. The key is tried with
// the provider before it is kept (SEC-7: `checkWith` on POST /v1/secrets); a refusal says what
// failed and nothing is saved.

import { all, api, get, post, session } from './api.js';
import { h, mount } from './dom.js';
import { sentence } from './words.js';

/** The shared Tools on `service` made from a template, one per template. */
function templateTools(tools, service) {
  const byTemplate = new Map();
  for (const t of tools) {
    if (t.serviceId === service.id && t.toolTemplateId && t.ownerId !== session.me.id && t.enabled) {
      if (!byTemplate.has(t.toolTemplateId)) byTemplate.set(t.toolTemplateId, t);
    }
  }
  return [...byTemplate.values()];
}

export async function connectPage(view, { showError }) {
  // One round: the three reads do not depend on each other.
  const [services, tools, me] = await Promise.all([all('/v1/services'), all('/v1/tools'), get('/v1/me/chat-processes')]);
  const models = services.filter((s) => s.type === 'llm_provider' && s.enabled);
  const mine = tools.filter((t) => t.ownerId === session.me.id && t.toolTemplateId);
  const cards = models.map((service) => {
    const shared = templateTools(tools, service);
    const own = mine.filter((t) => t.serviceId === service.id);
    const connected = shared.length > 0 && shared.every((s) => own.some((o) => o.toolTemplateId === s.toolTemplateId));
    const key = h('input', { type: 'password', autocomplete: 'off', required: true, 'aria-label': `API key for ${service.name}` });
    const model = h('input', { value: shared[0]?.connectionParams?.model || '', 'aria-label': 'Model' });
    const status = h('p.status', { role: 'status' });
    const connect = async (e) => {
      e.preventDefault();
      const button = e.submitter;
      if (button) button.disabled = true;
      const made = [];
      try {
        // SEC-7: the server tries the key on the provider first and keeps nothing it refuses.
        mount(status, 'Trying your key with the provider…');
        status.classList.remove('error');
        const secret = await post('/v1/secrets', {
          name: `My key for ${service.name}`, type: 'api_key', value: key.value,
          checkWith: { serviceId: service.id, api: shared[0]?.operation?.api || 'openai' },
        });
        made.push(`/v1/secrets/${secret.id}`);
        for (const t of shared) {
          const params = { ...(t.connectionParams || {}) };
          if (model.value.trim()) params.model = model.value.trim();
          const tool = await post('/v1/tools', {
            name: `${t.name} (mine)`, serviceId: service.id, toolTemplateId: t.toolTemplateId,
            connectionParams: params, secretId: secret.id, enabled: true, shared: false,
          });
          made.unshift(`/v1/tools/${tool.id}`);
        }
        key.value = '';
        mount(status, 'Connected. Your answers now use your own key.');
        await connectPage(view, { showError });
      } catch (err) {
        // Nothing half-made stays behind: undo in reverse order.
        for (const path of made) await api('DELETE', path).catch(() => {});
        mount(status, sentence(err));
        status.classList.add('error');
        key.focus();
      } finally { if (button) button.disabled = false; }
    };
    const disconnect = async () => {
      try {
        const secrets = new Set(own.map((t) => t.secretId).filter(Boolean));
        for (const t of own) await api('DELETE', `/v1/tools/${t.id}`);
        for (const s of secrets) await api('DELETE', `/v1/secrets/${s}`);
        await connectPage(view, { showError });
      } catch (err) { showError(err); }
    };
    return h('li.connection', { dataset: { serviceId: service.id, connected: connected ? 'yes' : 'no' } },
      h('h2', service.name),
      h('p.muted', service.endpoint || ''),
      connected
        ? [h('p', 'Connected with your own key (', own.map((t) => t.connectionParams?.model).filter(Boolean)[0] || 'default model', ').'),
          h('button.disconnect', { type: 'button', onclick: disconnect }, 'Disconnect')]
        : shared.length
          ? h('form.connect', { onsubmit: connect },
            h('label', 'API key ', key), h('label', 'Model ', model),
            h('button', { type: 'submit' }, 'Connect'))
          : h('p.muted', 'Nothing on this Service is made from a template, so there is nothing to connect.'),
      status);
  });
  const waiting = me.items.filter((p) => !p.ready);
  mount(view,
    h('h1', 'Connect a model'),
    h('p', 'Bring your own API key for a model. It is stored encrypted, only your runs use it, and nobody, not even an admin, can read it back.'),
    models.length ? h('ul.cards', { id: 'connections' }, cards) : h('p.muted', 'No model Services are set up yet. Ask an admin to add one.'),
    waiting.length ? [h('h2', 'Still waiting for a connection'),
      h('ul', waiting.map((p) => h('li', h('strong', p.name), ': ', p.reason)))] : null);
}
