package awss3

import "github.com/safeput/safeput/store"

// What the writer needs of an adapter is declared in package store, and this one keeps all of
// it: the Store methods and the optional capabilities below, checked here when it compiles; the
// behaviours no method states, checked by the conformance suite (storetest) on every test
// server: its failures before a connection are store.NotSentErrors (store.ProgressTransport), a
// store's Retry-After reaches store.ResponseError.RetryAfter, and its requests carry the call's
// context to net/http, so the request-written signal (httptrace's WroteRequest) reaches the writer.
var (
	_ store.Store       = (*s3Store)(nil)
	_ store.Endpointer  = (*s3Store)(nil)
	_ store.InsecureTLS = (*s3Store)(nil)
	_ store.Warmer      = (*s3Store)(nil)
)
