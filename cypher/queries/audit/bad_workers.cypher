MATCH (w:Worker)
WHERE NOT w.type IN ['graph_query', 'llm_call', 'rest_api', 'mcp_call']
   OR NOT w.status IN ['idle', 'busy', 'offline']
   OR (w.status = 'idle' AND w.currentJobId IS NOT NULL)
   OR (w.status = 'busy' AND w.currentJobId IS NULL)
RETURN w.id AS id
