// Memory upkeep's overrides of one Conversation: its compression budget and
// Process; null inherits the settings'.
MATCH (c:Conversation {id: $id})
SET c.compressionTokenBudget = $budget, c.compressionProcessId = $processId
