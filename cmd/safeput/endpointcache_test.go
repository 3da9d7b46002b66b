package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

var md5BytesLogged = regexp.MustCompile(`"md5_bytes": (\d+)`)

// TestPutKeepsEndpointFacts: on every server, through both backends, `safeput put` keeps what a
// run learned about the endpoint (whether it checks part checksums: the probe) in the user's
// cache directory, and the next run starts from it without the probe. Where the server checks
// and echoes the checksum (the gateway, MinIO) no run hashes a part by MD5; where it does not
// (Ceph RGW) every run hashes every part. Every run lands, strongly verified and read back
// equal; --no-endpoint-cache neither reads nor writes the cache.
func TestPutKeepsEndpointFacts(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		bucket := s3test.NewBucket(t, s)
		data := s3test.RandomBytes(15<<20 + 3) // 5 MiB parts, one in flight: 4 receipts in order
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				cache := t.TempDir()
				env := append(serverEnv(s), "XDG_CACHE_HOME="+cache)
				// put returns the bytes the run hashed by MD5 and whether it sent the checksum probe.
				put := func(key string, extra ...string) (int64, bool) {
					t.Helper()
					args := []string{"--path-style", "--backend", backend, "--part-size", "5MiB", "--concurrency", "1",
						"--log-level", "debug", "--json", "put"}
					args = append(append(args, extra...), "-", "s3://"+bucket+"/"+key)
					r := runWith(t, env, bytes.NewReader(data), args...)
					expectCode(t, r, 0, "put "+key)
					if !bytes.Contains([]byte(r.stdout), []byte(`"verified_strong": true`)) {
						t.Errorf("put %s: not strongly verified:\n%s", key, r.stdout)
					}
					if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
						t.Fatalf("put %s: the stored object differs from what was sent", key)
					}
					m := md5BytesLogged.FindStringSubmatch(r.stderr)
					if m == nil {
						t.Fatalf("put %s: no md5_bytes in the debug log:\n%s", key, r.stderr)
					}
					n, _ := strconv.ParseInt(m[1], 10, 64)
					return n, strings.Contains(r.stderr, "probed whether the store checks part checksums")
				}
				// A server that checks the checksum refuses the probe and echoes it on every
				// receipt: no run hashes anything. Ceph: every run hashes every byte.
				want := int64(0)
				if s.IgnoresChecksums() {
					want = int64(len(data))
				}
				if got, probed := put(backend + "/first"); got != want || !probed {
					t.Errorf("first run hashed %d bytes by MD5, probed %v; want %d, probed", got, probed, want)
				}
				entries, err := os.ReadDir(cache + "/safeput/endpoints")
				if err != nil || len(entries) != 1 {
					t.Fatalf("after the first run the cache holds %v (%v), want one entry", entries, err)
				}
				if got, probed := put(backend + "/second"); got != want || probed {
					t.Errorf("second run hashed %d bytes by MD5, probed %v; want %d, no probe (the cache knew)", got, probed, want)
				}

				cache = t.TempDir()
				env = append(serverEnv(s), "XDG_CACHE_HOME="+cache)
				if got, probed := put(backend+"/uncached", "--no-endpoint-cache"); got != want || !probed {
					t.Errorf("--no-endpoint-cache run hashed %d bytes by MD5, probed %v; want %d, probed", got, probed, want)
				}
				if entries, err := os.ReadDir(cache); err != nil || len(entries) != 0 {
					t.Errorf("--no-endpoint-cache wrote %v (%v) into the cache directory", entries, err)
				}
			})
		}
	})
}

// TestPutSingleUsesWhatTheEndpointTaught: a run that puts one small object (a single PUT) sends
// no checksum probe: it is the run's only write, and it would wait for the probe's requests. Its
// answer's MD5 ETag proves it. Once a multipart run has kept in the cache that the server checks
// and echoes the checksum (the gateway, MinIO), the next single PUT is proven by the checksum its
// answer echoes, hashing nothing by MD5; `--json` says which ("verified", "verified_by"). Where
// the server ignores the header (Ceph RGW) every single PUT is proven by its MD5 ETag. Every run
// lands, read back equal.
func TestPutSingleUsesWhatTheEndpointTaught(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		bucket := s3test.NewBucket(t, s)
		small, large := s3test.RandomBytes(64<<10), s3test.RandomBytes(10<<20+1)
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				env := append(serverEnv(s), "XDG_CACHE_HOME="+t.TempDir())
				type putJSON struct {
					Verified   string `json:"verified"`
					VerifiedBy string `json:"verified_by"`
					Requests   int    `json:"requests"`
				}
				put := func(key string, data []byte) (res putJSON, hashed int64, probed bool) {
					t.Helper()
					r := runWith(t, env, bytes.NewReader(data), "--path-style", "--backend", backend, "--part-size", "5MiB",
						"--log-level", "debug", "--json", "put", "-", "s3://"+bucket+"/"+key)
					expectCode(t, r, 0, "put "+key)
					if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
						t.Fatalf("put --json: %v\n%s", err, r.stdout)
					}
					if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
						t.Fatalf("put %s: the stored object differs from what was sent", key)
					}
					m := md5BytesLogged.FindStringSubmatch(r.stderr)
					if m == nil {
						t.Fatalf("put %s: no md5_bytes in the debug log:\n%s", key, r.stderr)
					}
					hashed, _ = strconv.ParseInt(m[1], 10, 64)
					return res, hashed, strings.Contains(r.stderr, "probed whether the store checks part checksums")
				}
				res, hashed, probed := put(backend+"/single-first", small)
				if res.Verified != "etag-md5" || res.VerifiedBy != "PutObject" || res.Requests != 1 || hashed != int64(len(small)) || probed {
					t.Errorf("first run: %+v, %d bytes hashed, probed %v: want etag-md5 from PutObject, one request, every byte hashed, no probe",
						res, hashed, probed)
				}
				// Ceph answered the single PUT without the checksum's echo, so the cache holds that
				// it checks none, and nothing is asked.
				if _, _, probed := put(backend+"/multipart", large); probed == s.IgnoresChecksums() {
					t.Errorf("the multipart run probed %v; want a probe beside its create unless the server ignores checksums", probed)
				}
				want := putJSON{Verified: "crc32c", VerifiedBy: "PutObject", Requests: 1}
				wantHashed := int64(0)
				if s.IgnoresChecksums() {
					want.Verified, wantHashed = "etag-md5", int64(len(small))
				}
				if res, hashed, probed := put(backend+"/single-second", small); res != want || hashed != wantHashed || probed {
					t.Errorf("second run: %+v, %d bytes hashed, probed %v: want %+v, %d bytes hashed, no probe", res, hashed, probed, want, wantHashed)
				}
			})
		}
	})
}
