// Lineage: from an answer to the run that wrote it, the Tools its steps ran, the Services those
// Tools call and the Workers that ran them: the graph's edges (GENERATED_BY, INVOKES_TOOL /
// CALLS_TOOL, USES_SERVICE, the step runs' workers) drawn as four linked columns.

import { all } from './api.js';
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
