// Package catrust builds the TLS settings both adapters use when a store's certificate comes
// from a private CA: the system roots plus the caller's PEM bundle, for that store only.
package catrust

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// ErrNoCertificate: a bundle was given but holds no PEM certificate. An empty pool would fall
// back to nothing useful silently, so it is refused.
var ErrNoCertificate = errors.New("CA bundle holds no PEM certificate")

// Config returns the client TLS config for a store: nil when there is nothing to change (system
// roots, verification on), the system roots plus pem when pem is set, or verification off when
// insecure. Setting both is refused: a CA trusted explicitly and no verification contradict.
func Config(pem []byte, insecure bool) (*tls.Config, error) {
	if insecure && len(pem) > 0 {
		return nil, errors.New("a CA bundle and InsecureSkipVerify together: trust the CA or skip verification, not both")
	}
	if insecure {
		return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}, nil //nolint:gosec // explicitly asked for
	}
	if len(pem) == 0 {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		// No system roots (a scratch container): the bundle alone is still what was asked.
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, ErrNoCertificate
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}
