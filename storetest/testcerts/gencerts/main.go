// Command gencerts writes a throw-away CA and a server certificate it signs for 127.0.0.1 and
// localhost into a directory, for the test servers that serve TLS (scripts/s3server.sh):
// ca.pem, ca.key, server.pem, server.key. Made in memory with crypto/x509; no network.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/safeput/safeput/storetest/testcerts"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gencerts DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gencerts:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	ca, err := testcerts.NewCA("safeput test CA")
	if err != nil {
		return err
	}
	leaf, err := ca.Server(false, "127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.pem": ca.PEM, "ca.key": caKey, "server.pem": leaf.CertPEM, "server.key": leaf.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
