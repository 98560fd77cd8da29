// ENT-1: a user-created Entity (source user), owned by its creator.
MATCH (u:User {id: $createdBy})
CREATE (n:Entity {uuid: $uuid, name: $name, summary: $summary, category: $category,
                  facets: $facets, labels: ['Entity'], source: 'user', createdBy: $createdBy,
                  createdAt: $now})
CREATE (n)-[:OWNED_BY {createdAt: $now}]->(u)
RETURN n.uuid AS id
