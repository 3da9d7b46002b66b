package bench

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/storetest/s3test"
)

// checksumRecorder notes the checksum algorithm of every part and single PUT safeput sends.
type checksumRecorder struct {
	store.Store
	mu   sync.Mutex
	algs map[store.ChecksumAlgorithm]int
}

func (c *checksumRecorder) note(a store.ChecksumAlgorithm) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.algs[a]++
}

func (c *checksumRecorder) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	c.note(in.Checksum.Algorithm)
	return c.Store.PutObject(ctx, in)
}

func (c *checksumRecorder) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	c.note(in.Checksum.Algorithm)
	return c.Store.UploadPart(ctx, in)
}

// The integrity row must describe what the benchmark's safeput actually sends: upload through
// the harness's own uploader and compare the checksum headers seen with the row's claims.
func TestSafeputIntegrityRowMatchesRun(t *testing.T) {
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		if !slices.Contains(DefaultServers, srv.Name) {
			t.Skipf("the benchmark measures on %v only", DefaultServers)
		}
		bucket := s3test.NewBucket(t, srv)
		st, err := awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		rec := &checksumRecorder{Store: st, algs: map[store.ChecksumAlgorithm]int{}}
		p := Params{PartSize: 5 << 20, Concurrency: 2, Signing: SigningUnsigned}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		data := s3test.RandomBytes(11 << 20)
		upload, err := safeputUploader(rec, srv.Name, bucket, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := upload(ctx, "row", Source{Reader: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		row := safeputIntegrity(p)
		t.Logf("sent %v; row: %s", rec.algs, row)
		if len(rec.algs) != 1 {
			t.Fatalf("requests carried %v checksum algorithms, want one", rec.algs)
		}
		// The row reads "the server's own profile (NAMES; ...): CLAIMS"; the claims must name
		// what was sent, and NAMES the profile this server's run used.
		names, claims, _ := strings.Cut(row, "): ")
		for alg := range rec.algs {
			if alg == store.ChecksumNone {
				if strings.Contains(claims, "CRC") || strings.Contains(claims, "SHA") {
					t.Errorf("safeput sent no checksum header, but the integrity row claims %q", claims)
				}
			} else if !strings.HasPrefix(claims, string(alg)+" ") && !strings.Contains(claims, string(alg)+" on "+srv.Name) {
				t.Errorf("safeput sent %s, but the integrity row claims %q", alg, claims)
			}
		}
		if p := safeputProfile(srv.Name); p != srv.Name || !strings.Contains(names, p) {
			t.Errorf("integrity row %q does not name the profile the run used (%s)", row, p)
		}
	})
}
