// How many items the recall_embedding vector index holds (every `Embedded` node, whoever owns
// it), from the count store: when no more than a search asked the index for, the index's answer
// held them all, and a scan of the caller's own could find none it missed.
MATCH (x:Embedded)
RETURN count(x) AS total
