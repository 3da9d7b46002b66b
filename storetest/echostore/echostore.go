// Package echostore is a fault-injecting S3 endpoint that answers every request with an S3
// <Error> whose Message quotes the request's headers back, as some stores do: the Authorization
// header, the session token and the SSE-C key included, in the forms a message may print them
// in. A test points an adapter at it and checks that none of those values reaches an error, a
// log line or a JSON answer.
//
// Test support, outside safeput's compatibility promise (see package storetest).
package echostore

import (
	"encoding/pem"
	"encoding/xml"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Server is a running echoing endpoint, over TLS (an SSE-C key is only sent over TLS).
type Server struct {
	// URL is the endpoint, https://127.0.0.1:port.
	URL string
	// CABundle is the PEM certificate a client must trust to reach URL.
	CABundle []byte

	extra []string

	mu         sync.Mutex
	requests   int
	signatures []string
}

// Start starts a server for the rest of the test. Every message also quotes each of extra as
// it is (a secret the test wants to see redacted wherever it turns up). The first answer is a
// 500 InternalError, so a retry (and its log line) happens; every later one is a 400
// InvalidRequest, which fails the write at once.
func Start(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	s := &Server{extra: extra}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// A client that gives up on a connection is no news here.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	s.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return s
}

// Signatures returns the request signatures (SigV4's Signature=, hex) the server received,
// which no output may carry either.
func (s *Server) Signatures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.signatures)
}

var signature = regexp.MustCompile(`Signature=([0-9a-f]{16,})`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	first := s.requests == 1
	if m := signature.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		s.signatures = append(s.signatures, m[1])
	}
	s.mu.Unlock()

	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	// The extra strings and the values bare, the header's last first (the x-amz- ones, where
	// the secrets are, come before whatever cuts a long message short), then as a header dump
	// and as Go prints an http.Header.
	var msg strings.Builder
	msg.WriteString("The request was refused.")
	for _, v := range s.extra {
		msg.WriteString(" Also: " + v)
	}
	msg.WriteString(" Values:")
	for _, k := range slices.Backward(names) {
		for _, v := range r.Header[k] {
			msg.WriteString(" " + v)
		}
	}
	msg.WriteString("\nHeaders:\n")
	for _, k := range names {
		fmt.Fprintf(&msg, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
	}
	fmt.Fprintf(&msg, "As received: %v", r.Header)

	status, code := http.StatusBadRequest, "InvalidRequest"
	if first {
		status, code = http.StatusInternalServerError, "InternalError"
	}
	w.Header().Set("x-amz-request-id", "ECHO")
	if r.Method == http.MethodHead {
		w.WriteHeader(status) // a HEAD answer has no body
		return
	}
	body, _ := xml.Marshal(struct {
		XMLName   xml.Name `xml:"Error"`
		Code      string   `xml:"Code"`
		Message   string   `xml:"Message"`
		RequestID string   `xml:"RequestId"`
	}{Code: code, Message: msg.String(), RequestID: "ECHO"})
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write(append([]byte(xml.Header), body...))
}
