package receiver

// RecordKey is the store key of the record [Receiver.Execute] keeps for key
// in scope: scope + ":" + key. Scopes are the faces' (a handler name for
// the Watermill face, "http" for the HTTP face, whose keys name the client
// and the route as well). Tools that read or remove a record (package
// admin) derive its key here, so that they address exactly the receiver's.
func RecordKey(scope, key string) string { return scope + ":" + key }
