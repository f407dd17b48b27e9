package middleware

// RecordKey is the store key of the record [Receiver.Execute] keeps for key
// in scope: scope + ":" + key. Scopes are handler names (the Watermill
// face, [Receiver.Middleware]) or [HTTPScope] (the HTTP face, whose keys
// are [RequestKey]s). Tools that read or remove a record (package admin)
// derive its key here, so that they address exactly the receiver's.
func RecordKey(scope, key string) string { return scope + ":" + key }
