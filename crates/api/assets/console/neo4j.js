// "Open in Neo4j Browser" (admins): a link to the Browser of the graph this server uses, with a
// lineage query typed in for the admin to run. The API tells an admin where the Browser answers
// (`neo4jBrowserUrl` in GET /v1/me); everyone else gets no link. The query is only put in the
// editor (`cmd=edit`), never run by the link itself.

import { session } from './api.js';
import { h } from './dom.js';

/** A string literal in Cypher: quotes and backslashes escaped. */
const literal = (s) => `'${String(s).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The lineage questions, one per kind of thing the console shows. */
export const lineageQuery = {
  run: (id) => `MATCH p=(r:Run {id: ${literal(id)}})-[*1..2]-() RETURN p LIMIT 300`,
  conversation: (id) => `MATCH p=(c:Conversation {id: ${literal(id)}})-[:HAS_TURN]->(:ConversationTurn)-[:HAS_ALTERNATIVE]->(a:Alternative) `
    + 'OPTIONAL MATCH q=(a)-[:GENERATED_BY|EXECUTED_BY]->() RETURN p, q LIMIT 500',
  entity: (uuid) => `MATCH p=(e:Entity {uuid: ${literal(uuid)}})-[*1..2]-() RETURN p LIMIT 300`,
};

/** The Browser's address with `cypher` in its editor, or null when the caller is not told one. */
export function browserUrl(cypher) {
  const base = session.me?.neo4jBrowserUrl;
  if (!base) return null;
  const sep = base.includes('?') ? '&' : '?';
  return `${base}${sep}cmd=edit&arg=${encodeURIComponent(cypher)}`;
}

/** The link, or null (not an admin, or no Browser configured). */
export function neo4jLink(cypher) {
  const href = browserUrl(cypher);
  return href ? h('a.neo4j-link', { href, target: '_blank', rel: 'noopener noreferrer', title: cypher }, 'Open in Neo4j Browser') : null;
}
