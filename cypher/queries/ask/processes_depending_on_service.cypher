// Which Processes would break if Service $serviceId went down? Those whose current version has
// a step calling a Tool on it, directly or through the current versions of child Processes.
MATCH path = (p:Process)-[:HAS_VERSION|HAS_STEP|CALLS_PROCESS*2..30]->(ps:ProcessStep)
             -[:CALLS_TOOL]->(t:Tool)-[:USES_SERVICE]->(s:Service {id: $serviceId})
WITH p, t, nodes(path) AS ns
WHERE all(i IN range(0, size(ns) - 2)
          WHERE NOT (ns[i]:Process AND ns[i + 1]:ProcessVersion) OR ns[i + 1].number = ns[i].version)
RETURN p.id AS processId, p.name AS name, p.enabled AS enabled,
       collect(DISTINCT t.id) AS throughTools
ORDER BY processId
