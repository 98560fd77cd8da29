// The memory upkeep settings (one node; absent until first changed: the defaults apply).
MATCH (s:MemorySettings {id: 'memory'})
RETURN s.doc AS doc, s.revision AS revision
