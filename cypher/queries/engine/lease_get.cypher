// Who holds the engine lease and until when, for `/readyz`.
MATCH (l:EngineLease {id: 'engine'})
RETURN l.holder AS holder, l.epoch AS epoch, l.expiresAt AS expiresAt
