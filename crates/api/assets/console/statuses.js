// Status words as the API's OpenAPI document lists them (its enums under components.schemas):
// the console spells none of its own, so it cannot compare against a word the API no longer
// sends. Loaded once, before the first page; `run.completed` is the word `completed`,
// `run.waitingForApproval` is `waiting_for_approval`, and a name the API has no word for throws.

const SCHEMAS = { run: 'RunStatus', step: 'StepStatus', alternative: 'CacheStatus' };
const loaded = {};
let loading = null;

/** The words of an enum schema: its `enum`, or a `oneOf` of `enum`s and `const`s. */
function wordsOf(schema) {
  if (!schema) return [];
  if (Array.isArray(schema.enum)) return schema.enum;
  return (schema.oneOf || []).flatMap((s) => s.enum || ('const' in s ? [s.const] : []));
}

const camel = (word) => word.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** Fetches /openapi.json once (again after a failure); rejects if a lifecycle has no words. */
export function loadStatuses() {
  loading ??= fetch('/openapi.json')
    .then((res) => {
      if (!res.ok) throw new Error(`/openapi.json answered ${res.status}`);
      return res.json();
    })
    .then((doc) => {
      for (const [name, schema] of Object.entries(SCHEMAS)) {
        const words = wordsOf(doc?.components?.schemas?.[schema]);
        if (!words.length) throw new Error(`/openapi.json lists no words for ${schema}`);
        loaded[name] = new Map(words.map((w) => [camel(w), w]));
      }
    })
    .catch((err) => { loading = null; throw err; });
  return loading;
}

const NAME = Symbol('lifecycle');

function lifecycle(name) {
  return new Proxy({ [NAME]: name }, {
    get(target, key) {
      if (typeof key === 'symbol' || key === 'then') return target[key];
      const words = loaded[name];
      if (!words) throw new Error(`${name} status words read before loadStatuses()`);
      if (!words.has(key)) throw new Error(`the API has no ${name} status "${key}"`);
      return words.get(key);
    },
  });
}

export const run = lifecycle('run');
export const step = lifecycle('step');
/** An Alternative as the tree shows it (`cacheStatus`). */
export const alternative = lifecycle('alternative');

/** Every word of a lifecycle, in the API's order. */
export function every(statuses) {
  return [...loaded[statuses[NAME]].values()];
}
