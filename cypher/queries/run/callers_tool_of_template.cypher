// The caller's own Tool made from a ToolTemplate (the newest enabled one): what a shared
// Process step runs for that caller instead of the step's named Tool (docs/connections.md).
MATCH (t:Tool {toolTemplateId: $templateId, ownerId: $ownerId})
WHERE t.enabled = true
RETURN t.id AS id
ORDER BY t.createdAt DESC
LIMIT 1
