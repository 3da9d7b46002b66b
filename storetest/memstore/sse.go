package memstore

import "github.com/safeput/safeput/store"

// stored is the encryption an object written with e reports: e without the customer key (its
// MD5 instead), or none under Rules.IgnoreSSE. Nothing is really encrypted: only the
// reporting and the SSE-C key checks of a real store are emulated.
func (s *Store) stored(e store.Encryption) store.Encryption {
	if s.rules.IgnoreSSE || e.Type == store.SSENone {
		return store.Encryption{}
	}
	e.KMSContext = nil
	if e.Type == store.SSEC {
		e.CustomerKeyMD5, e.CustomerKey = e.CustomerKey.MD5(), nil
	}
	return e
}

// customerKeyFits checks a request's SSE-C key against the object's (or upload's) encryption as
// S3 does: an SSE-C object needs its key (400 without, 403 with another); a key on anything
// else is 400. Under Rules.IgnoreSSE keys are ignored, as by a store that knows no SSE.
func (s *Store) customerKeyFits(op, rid string, enc store.Encryption, k store.CustomerKey) error {
	switch {
	case s.rules.IgnoreSSE:
		return nil
	case enc.Type == store.SSEC && len(k) == 0:
		return respErr(op, rid, 400, "InvalidRequest", "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.")
	case enc.Type == store.SSEC && k.MD5() != enc.CustomerKeyMD5:
		return respErr(op, rid, 403, "AccessDenied", "The SSE-C key does not match the object's.")
	case enc.Type != store.SSEC && len(k) != 0:
		return respErr(op, rid, 400, "InvalidRequest", "The encryption parameters are not applicable to this object.")
	}
	return nil
}
