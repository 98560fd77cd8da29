// AGT-14: every spend window of a day, loaded by the engine when it takes the lease (it is the
// windows' only writer, so from then on it keeps them itself).
MATCH (w:SpendWindow)
WHERE w.day = $day
RETURN w.key AS key, w.spentMicros AS spent
