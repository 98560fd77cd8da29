// Lineage: from an answer to the run that wrote it, the Tools its steps ran, the Services those
// Tools call and the Workers that ran them: the graph's edges (GENERATED_BY, INVOKES_TOOL /
// CALLS_TOOL, USES_SERVICE, the step runs' workers) drawn as four linked columns. And a fork's
// lineage: the run it was forked from, and the steps whose results it reused.

import { all, ApiError, post } from './api.js';
import { badge, h } from './dom.js';

/** The Tool each step run actually ran: the caller's own when it took the named one's place. */
function toolOfStep(step, version) {
  const ran = step.telemetry?.ranToolId;
  if (ran) return ran;
  if (step.toolId) return step.toolId;
  return version?.steps?.find((s) => s.id === step.stepId)?.tool || null;
}

export async function lineage(run, version) {
  const [tools, services] = await Promise.all([
    all('/v1/tools').catch(() => []), all('/v1/services').catch(() => []),
  ]);
  const toolById = new Map(tools.map((t) => [t.id, t]));
  const serviceById = new Map(services.map((s) => [s.id, s]));
  const used = new Map(); // tool id → workers
  for (const s of run.steps) {
    // An agent step's own row would name its model without a worker: its calls say who ran.
    if (run.steps.some((c) => c.stepId.startsWith(`${s.stepId}#`))) continue;
    // A fork's reused step called nothing: its Tool ran in the original run, not in this one.
    if (s.reusedFrom) continue;
    const t = toolOfStep(s, version);
    if (!t) continue;
    if (!used.has(t)) used.set(t, new Set());
    if (s.workerId) used.get(t).add(s.workerId);
  }
  const rows = [...used.entries()].map(([toolId, workers]) => {
    const tool = toolById.get(toolId);
    const service = tool && serviceById.get(tool.serviceId);
    return h('li.lineage-row', { dataset: { tool: toolId } },
      h('span.node.tool', h('a', { href: '#/tools' }, tool?.name || toolId)),
      ' → ',
      h('span.node.service', service
        ? [h('a.service-link', { href: '#/services' }, service.name), ' ', badge(service.status || 'unknown')]
        : h('span.muted', tool ? tool.serviceId : 'not visible to you')),
      ' → ',
      h('span.node.workers', workers.size ? [...workers].map((w) => h('code', w)) : h('span.muted', 'no worker recorded')));
  });
  const asked = run.inputs?.alternativeId
    ? h('a', { href: `#/c/${run.inputs.conversationId}` }, 'the answer in its conversation') : h('span.muted', 'no conversation');
  return h('section.lineage', { 'aria-label': 'Lineage' },
    h('h2', 'Lineage'),
    h('p', asked, ' → this run → the Tools it ran → their Services → the Workers that ran them'),
    rows.length ? h('ul.lineage-rows', rows) : h('p.muted', 'No Tool has run yet.'));
}

// ---- Forks of a run (FORK-1..3): the "Fork from this step" form of a settled top-level run, the
// "Forked from …" line on a fork's page, and the link from a reused step to the run it came from.

/** `<runId>/<stepId>`, the original's StepRun a reused step took its output from. */
export function originOf(reusedFrom) {
  const cut = reusedFrom.indexOf('/');
  return cut < 0 ? { runId: reusedFrom, stepId: '' } : { runId: reusedFrom.slice(0, cut), stepId: reusedFrom.slice(cut + 1) };
}

/** "reused" and a link to the original run: nothing was called for this step. */
export function reusedLabel(step) {
  if (!step?.reusedFrom) return null;
  const { runId } = originOf(step.reusedFrom);
  return h('span.reused-label', h('span.badge.b-reused', 'reused'), ' from ',
    h('a.reused-link', { href: `#/runs/${runId}` }, 'the original run'));
}

/** On a fork's page: where it came from, and the way to the diff with its original. */
export function forkLineage(run) {
  if (!run.forkedFrom) return null;
  return h('p.forked-from',
    'Forked from ', h('a.original-link', { href: `#/runs/${run.forkedFrom}` }, h('code', run.forkedFrom)),
    ' at step ', h('code', run.forkStep || '?'), ' · ',
    h('a.compare-link', { href: `#/runs/${run.forkedFrom}/diff/${run.id}` }, 'Compare with the original'));
}

/** A refusal in words: the API's own message and each broken rule's, which say why (FORK-2: the
 * run has not settled, FORK-3: no such step or version); the generic sentences of words.js would
 * not. */
function refusal(err) {
  if (!(err instanceof ApiError)) return h('p.error.fork-error', { role: 'alert' }, err.message);
  const e = err.body?.error || {};
  return h('p.error.fork-error', { role: 'alert' },
    `The fork was refused: ${e.message || err.message}`,
    (e.details || []).map((d) => h('span.detail', h('br'), d.invariant ? `${d.invariant}: ` : '', d.message || '')));
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** "Fork from this step": a button that opens the form; Submit starts the fork and opens it. */
export function forkButton(run, stepId) {
  const slot = h('div.fork-slot');
  const open = () => {
    const inputs = h('textarea#fork-inputs', { rows: 8, spellcheck: 'false' }, JSON.stringify(run.inputs ?? {}, null, 2));
    const version = h('input#fork-version', { type: 'number', min: 1, step: 1, placeholder: String(run.processVersion) });
    const message = h('div.fork-message', { 'aria-live': 'polite' });
    const submit = h('button', { type: 'submit' }, 'Start the fork');
    const form = h('form.fork-form', {
      onsubmit: async (e) => {
        e.preventDefault();
        let parsed;
        try { parsed = JSON.parse(inputs.value || '{}'); } catch (err) {
          message.replaceChildren(h('p.error.fork-error', { role: 'alert' }, `The inputs are not JSON: ${err.message}`));
          return;
        }
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
          message.replaceChildren(h('p.error.fork-error', { role: 'alert' }, 'The inputs must be a JSON object of input names and values.'));
          return;
        }
        // Only what was changed is sent: the fork keeps the original's other inputs anyway.
        const body = { fromStep: stepId };
        if (!same(parsed, run.inputs ?? {})) body.inputs = parsed;
        if (version.value.trim()) body.processVersion = Number(version.value);
        submit.disabled = true;
        try {
          const started = await post(`/v1/runs/${run.id}/forks`, body);
          location.hash = `#/runs/${started.runId}`;
        } catch (err) {
          submit.disabled = false;
          message.replaceChildren(refusal(err));
        }
      },
    },
    h('p.note', `Step ${stepId} and every step after it run again; the steps before it reuse this run's results when their inputs are unchanged.`),
    h('label', { for: 'fork-inputs' }, 'Run inputs (JSON)'), inputs,
    h('label', { for: 'fork-version' }, `Process version (empty: version ${run.processVersion})`), version,
    h('div.actions', submit, h('button', { type: 'button', onclick: () => slot.replaceChildren(button) }, 'Cancel')),
    message);
    slot.replaceChildren(form);
    inputs.focus();
  };
  const button = h('button.fork-step', { type: 'button', onclick: open }, 'Fork from this step');
  slot.append(button);
  return slot;
}
