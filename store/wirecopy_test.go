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
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/internal/progress"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
)

// countingConn counts the writes that reach the socket, keeping *net.TCPConn's SyscallConn
// (and so sendfile).
type countingConn struct {
	*net.TCPConn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.TCPConn.Write(p)
}

// TestPartGoesOutWithoutACopy sends a 4 MiB part through each adapter, with a stall watchdog
// listening as the retry policy sets one up, over a transport dialing through bufpool.Dialer as
// the adapters' own do. A part buffer must reach the socket in 64 KiB writes straight from the
// buffer, each reported as progress: a wrapper in the chain that hides the body's WriteTo sends it
// through a 32 KiB copy buffer instead, twice the writes. A section of a file (a ReaderAt part)
// must not be written at all on Linux: the kernel sends it (sendfile), with progress reported at
// least once per MiB.
func TestPartGoesOutWithoutACopy(t *testing.T) {
	part := bytes.Repeat([]byte("safeput!"), 512<<10) // 4 MiB
	path := filepath.Join(t.TempDir(), "source")
	if err := os.WriteFile(path, append([]byte("head"), part...), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
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
			return countingConn{c.(*net.TCPConn), &writes}, nil
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
	bodies := []struct {
		name       string
		body       func() io.ReadSeeker
		maxWrites  int64
		minReports int64
	}{
		// 64 body writes, plus the request head; a report per 64 KiB written.
		{"buffer", func() io.ReadSeeker { return bytes.NewReader(part) }, 72, 64},
		// The request head only; a report per sendfile call, which sends at most 1 MiB.
		{"file section", func() io.ReadSeeker { return io.NewSectionReader(file, 4, int64(len(part))) }, 8, 4},
	}
	for _, a := range adapters {
		for _, b := range bodies {
			t.Run(a.name+"/"+b.name, func(t *testing.T) {
				if b.name == "file section" && runtime.GOOS != "linux" {
					t.Skip("sendfile is used on Linux only")
				}
				st, err := a.make()
				if err != nil {
					t.Fatal(err)
				}
				var reports atomic.Int64
				ctx := progress.With(context.Background(), func() { reports.Add(1) })
				writes.Store(0)
				received = nil
				_, err = st.UploadPart(ctx, &store.UploadPartInput{Bucket: "bucket", Key: "k", UploadID: "u", PartNumber: 1,
					Body: b.body(), ContentLength: int64(len(part)),
					Checksum: store.Checksum{Algorithm: store.ChecksumCRC32C, Value: crc}})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(received, part) {
					t.Fatalf("the server received %d bytes that differ from the %d-byte part", len(received), len(part))
				}
				if n := writes.Load(); n > b.maxWrites {
					t.Errorf("the 4 MiB part took %d writes to the socket, want at most %d", n, b.maxWrites)
				}
				if n := reports.Load(); n < b.minReports {
					t.Errorf("%d progress reports while sending the part, want at least %d", n, b.minReports)
				}
			})
		}
	}
}
