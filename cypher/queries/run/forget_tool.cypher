// Past step runs keep the tool id in their plan; their INVOKES_TOOL edge must not pin the Tool.
MATCH (:StepRun)-[e:INVOKES_TOOL]->(:Tool {id: $toolId})
DELETE e
