// Package testcerts makes throw-away certificates for TLS tests, in memory and without network:
// a CA, a server certificate it signs for 127.0.0.1 (and localhost), and the certificates a
// client must refuse (another CA's, another host's, an expired one).
//
// Test support, outside safeput's compatibility promise (see package storetest).
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CA is a throw-away certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, what a client is given as its CA bundle.
	PEM []byte
}

// NewCA makes a CA valid from an hour ago for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// KeyPEM is the CA's private key, PKCS #8 PEM (for LoadCA in another process).
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// LoadCA reads a CA written by gencerts (its certificate and PKCS #8 key, PEM).
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("testcerts: CA certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("testcerts: CA key is not ECDSA")
	}
	return &CA{cert: cert, key: key, PEM: certPEM}, nil
}

// Leaf is a server certificate and its key, PEM encoded, and as tls.Certificate.
type Leaf struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
}

// Server signs a server certificate for hosts (IP addresses or DNS names). expired makes one
// whose validity ended an hour ago.
func (ca *CA) Server(expired bool, hosts ...string) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if expired {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	l := &Leaf{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}
	if l.TLS, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		return nil, fmt.Errorf("testcerts: %w", err)
	}
	return l, nil
}

// Set is what a TLS test needs: the trusted CA and its good certificate for 127.0.0.1 and
// localhost, and three certificates a client trusting only CA must refuse.
type Set struct {
	CA        *CA
	Good      *Leaf // CA-signed, 127.0.0.1 and localhost
	OtherCA   *Leaf // 127.0.0.1, signed by a CA the client was not given
	WrongHost *Leaf // CA-signed, for another host name only
	Expired   *Leaf // CA-signed, 127.0.0.1, expired
}

// NewSet makes a Set with a new CA.
func NewSet() (*Set, error) {
	ca, err := NewCA("safeput test CA")
	if err != nil {
		return nil, err
	}
	return NewSetOf(ca)
}

// NewSetOf makes a Set whose trusted CA is ca.
func NewSetOf(ca *CA) (*Set, error) {
	other, err := NewCA("an untrusted CA")
	if err != nil {
		return nil, err
	}
	s := &Set{CA: ca}
	if s.Good, err = ca.Server(false, "127.0.0.1", "localhost"); err != nil {
		return nil, err
	}
	if s.OtherCA, err = other.Server(false, "127.0.0.1", "localhost"); err != nil {
		return nil, err
	}
	if s.WrongHost, err = ca.Server(false, "s3.other.example"); err != nil {
		return nil, err
	}
	if s.Expired, err = ca.Server(true, "127.0.0.1", "localhost"); err != nil {
		return nil, err
	}
	return s, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
