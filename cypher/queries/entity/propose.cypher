// AGT-13: what an agent's answer proposed to remember becomes a proposed Entity of the run's
// owner (source `suggestion`, status `proposed`), PROPOSED_BY the run. It is not memory until
// its owner confirms it (POST /v1/entities/{uuid}/confirm); nothing shows it before.
UNWIND $items AS p
MATCH (u:User {id: p.ownerId})
MATCH (r:Run {id: p.runId})
CREATE (n:Entity {uuid: p.uuid, name: p.name, summary: p.summary, labels: ['Entity'],
                  source: 'suggestion', status: 'proposed', createdBy: p.ownerId,
                  runId: p.runId, createdAt: p.at})
CREATE (n)-[:OWNED_BY {createdAt: p.at}]->(u)
CREATE (n)-[:PROPOSED_BY]->(r)
RETURN count(n) AS n
