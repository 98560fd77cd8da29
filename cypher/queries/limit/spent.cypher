// AGT-14: what the named daily spend windows hold (micro-dollars; 0 for a window not made yet).
UNWIND $keys AS k
OPTIONAL MATCH (w:SpendWindow {key: k})
RETURN k AS key, coalesce(w.spentMicros, 0) AS spent
