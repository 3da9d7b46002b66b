package store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestPartGoesOutWithoutACopy sends a 4 MiB part buffer through each adapter, with a stall
// watchdog listening as the retry policy sets one up, over a transport dialing through
// bufpool.Dialer as the adapters' own do. The part must reach the socket in 64 KiB writes
// straight from the buffer, each reported as progress: a wrapper in the chain that hides the
// body's WriteTo sends it through a 32 KiB copy buffer instead, twice the writes.
func TestPartGoesOutWithoutACopy(t *testing.T) {
	part := bytes.Repeat([]byte("safeput!"), 512<<10) // 4 MiB
	var received []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received, _ = io.ReadAll(r.Body)
		w.Header().Set("ETag", `"0123abcd"`)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	var writes atomic.Int64
	transport := func() *http.Transport {
		return &http.Transport{DialContext: bufpool.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{c, &writes}, nil
		})}
	}
	adapters := []struct {
		name string
		make func() (store.Store, error)
	}{
		{"aws", func() (store.Store, error) {
			return awss3.New(awss3.Config{Endpoint: srv.URL, AccessKey: "AKID", SecretKey: "SECRET", PathStyle: true,
				HTTPClient: &http.Client{Transport: transport()}})
		}},
		{"minio", func() (store.Store, error) {
			return miniogo.New(miniogo.Config{Endpoint: srv.URL, AccessKey: "AKID", SecretKey: "SECRET", PathStyle: true,
				Transport: transport()})
		}},
	}
	sum := crc32.Checksum(part, crc32.MakeTable(crc32.Castagnoli))
	crc := base64.StdEncoding.EncodeToString([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			st, err := a.make()
			if err != nil {
				t.Fatal(err)
			}
			var reports atomic.Int64
			ctx := store.WithProgress(context.Background(), func() { reports.Add(1) })
			writes.Store(0)
			received = nil
			_, err = st.UploadPart(ctx, &store.UploadPartInput{Bucket: "bucket", Key: "k", UploadID: "u", PartNumber: 1,
				Body: bytes.NewReader(part), ContentLength: int64(len(part)),
				Checksum: store.Checksum{Algorithm: store.ChecksumCRC32C, Value: crc}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(received, part) {
				t.Fatalf("the server received %d bytes that differ from the %d-byte part", len(received), len(part))
			}
			// 64 body writes, plus the request head.
			if n := writes.Load(); n > 72 {
				t.Errorf("the 4 MiB part took %d writes to the socket, want at most 72 (64 KiB each, no copy buffer)", n)
			}
			if n := reports.Load(); n < 64 {
				t.Errorf("%d progress reports while sending the part, want at least 64", n)
			}
		})
	}
}
