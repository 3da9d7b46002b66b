package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/safeput/safeput/internal/faultproxy"
	"github.com/safeput/safeput/internal/s3test"
)

// The CLI at the wire: `safeput put` through a fault proxy in front of the real server, both
// backends. A hung server ends in exit 3 within the bound the README states for the window; a
// throttling storm and a body altered at the wire still end in exit 0 with the exact bytes.
func TestPutThroughWireFaults(t *testing.T) {
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		proxy, err := faultproxy.Start(faultproxy.Config{Upstream: s.Endpoint, AccessKey: s.AccessKey, SecretKey: s.SecretKey, Region: s.Region, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		via := s
		via.Endpoint = proxy.URL()
		bucket := s3test.NewBucket(t, s)
		small := s3test.RandomBytes(3 << 20)
		large := s3test.RandomBytes(23 << 20)
		smallFile, largeFile := writeFile(t, small), writeFile(t, large)
		const window = time.Second
		cases := []struct {
			name  string
			rules []faultproxy.Rule
			file  string
			data  []byte
			code  int
		}{
			{"hung-server-single", []faultproxy.Rule{{Op: faultproxy.OpAny, Fault: faultproxy.Fault{Kind: faultproxy.Hold}}}, smallFile, small, exitTransient},
			{"hung-server-multipart", []faultproxy.Rule{{Op: faultproxy.OpAny, Fault: faultproxy.Fault{Kind: faultproxy.Hold}}}, largeFile, large, exitTransient},
			{"throttling-storm", []faultproxy.Rule{{Op: faultproxy.OpAny, Prob: 0.3, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503, Code: "SlowDown"}}}, largeFile, large, exitOK},
			{"flipped-put", []faultproxy.Rule{{Op: faultproxy.PutObject, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped}}}, smallFile, small, exitOK},
			{"flipped-part", []faultproxy.Rule{{Op: faultproxy.UploadPart, Nth: 2, Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped, Rechecksum: true}}}, largeFile, large, exitOK},
		}
		for _, backend := range []string{"aws", "minio"} {
			for _, c := range cases {
				t.Run(backend+"/"+c.name, func(t *testing.T) {
					proxy.SetRules(c.rules...)
					defer proxy.SetRules()
					key := backend + "/" + c.name
					start := time.Now()
					r := cli(t, via, nil, "--backend", backend, "--provider", "versitygw", "--part-size", "5MiB",
						"--stall-timeout", window.String(), "--json", "put", "--no-progress", c.file, "s3://"+bucket+"/"+key)
					took := time.Since(start)
					proxy.SetRules()
					expectCode(t, r, c.code, c.name)
					// README: with every request hung, put fails within 3 × window + 30 s of clean-up.
					if bound := 3*window + 30*time.Second + 10*time.Second; took > bound {
						t.Errorf("took %v, bound %v", took, bound)
					}
					t.Logf("%s %s: exit %d after %v", backend, c.name, r.code, took)
					if ups := s3test.IncompleteUploads(t, s, bucket, key); len(ups) != 0 {
						t.Errorf("incomplete uploads left: %v", ups)
					}
					if c.code != exitOK {
						var je jsonError
						if err := json.Unmarshal([]byte(r.stdout), &je); err != nil || je.Code != "Stalled" || je.Kind != "transient" {
							t.Errorf("json %q (%v): want kind transient, code Stalled", r.stdout, err)
						}
						if s3test.Exists(t, s, bucket, key) {
							t.Error("a failed put left an object")
						}
						return
					}
					if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, c.data) {
						t.Fatalf("exit 0 but the object differs from the file (%d bytes vs %d)", len(got), len(c.data))
					}
					if !strings.Contains(r.stdout, `"verified_strong": true`) {
						t.Errorf("not strongly verified: %s", r.stdout)
					}
				})
			}
		}
	})
}
