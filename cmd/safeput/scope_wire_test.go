package main

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
)

// sweep and probe act only under the prefix they are given, through both backends, on a store
// that ignores the prefix of ListMultipartUploads (a proxy in front of the real server drops it,
// so every listing returns the whole bucket). The uploads of other keys are still there
// afterwards, listed on the server directly; the ones under the swept prefix are gone.
func TestSweepAndProbeStayInPrefix(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		proxy, via := viaProxy(t, s, 7)
		proxy.SetRules(faultproxy.Rule{Op: faultproxy.ListMultipartUploads, Fault: faultproxy.Fault{Kind: faultproxy.IgnorePrefix}})
		others := []string{"keep/other-team/a.bin", "scratch/other-team.bin", "sweepme-sibling.bin", "zzz-unrelated.bin"}
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				bucket := s3test.NewBucket(t, s)
				for _, key := range append([]string{"sweepme/a.bin", "sweepme/sub/b.bin"}, others...) {
					openUpload(t, s, bucket, key, 1000)
				}
				injected := proxy.Stats().Injected[faultproxy.IgnorePrefix]
				r := cli(t, via, nil, "--backend", backend, "--json", "sweep", "--run", "s3://"+bucket+"/sweepme/")
				expectCode(t, r, 0, "sweep --run")
				var rep sweepReport
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatalf("sweep --json: %v\n%s", err, r.stdout)
				}
				if rep.Found != 2 || rep.Aborted != 2 || rep.Failed != 0 {
					t.Errorf("sweep report %+v; want the two uploads under sweepme/ aborted", rep)
				}
				for _, u := range rep.Uploads {
					if !strings.HasPrefix(u.Key, "sweepme/") {
						t.Errorf("sweep reports %q, outside its prefix", u.Key)
					}
				}
				if got := proxy.Stats().Injected[faultproxy.IgnorePrefix]; got == injected {
					t.Fatal("the proxy dropped no prefix: the test did not play a store that ignores it")
				}
				wantLeft(t, s, bucket, others)

				injected = proxy.Stats().Injected[faultproxy.IgnorePrefix]
				r = cli(t, via, nil, "--backend", backend, "--provider", provider(s), "--json", "probe", "s3://"+bucket+"/scratch/")
				expectCode(t, r, 0, "probe")
				var prep probeReport
				if err := json.Unmarshal([]byte(r.stdout), &prep); err != nil {
					t.Fatalf("probe --json: %v\n%s", err, r.stdout)
				}
				if len(prep.Rows) == 0 || prep.Created.Uploads == 0 || len(prep.Leftovers) != 0 {
					t.Errorf("probe ran %d rows, created %d uploads, left %v; want a full run that leaves nothing", len(prep.Rows), prep.Created.Uploads, prep.Leftovers)
				}
				t.Logf("probe: %d rows, created %+v, removed %+v, clean-up %+v", len(prep.Rows), prep.Created, prep.Removed, prep.Cleanup)
				for _, u := range prep.Cleanup {
					if !strings.HasPrefix(u.Key, prep.ScratchPrefix) || u.State == "left-alone" {
						t.Errorf("probe's clean-up reports %+v: outside its scratch prefix %s, or not its own", u, prep.ScratchPrefix)
					}
				}
				if got := proxy.Stats().Injected[faultproxy.IgnorePrefix]; got == injected {
					t.Fatal("the proxy dropped no prefix during the probe")
				}
				wantLeft(t, s, bucket, others)
			})
		}
	})
}

// wantLeft checks, on the server directly, that the incomplete uploads of bucket are exactly
// one of each of keys.
func wantLeft(t *testing.T, s s3test.Server, bucket string, keys []string) {
	t.Helper()
	var left []string
	for _, u := range s3test.IncompleteUploads(t, s, bucket, "") {
		key, _, _ := strings.Cut(u, "@")
		left = append(left, key)
	}
	sort.Strings(left)
	want := append([]string(nil), keys...)
	sort.Strings(want)
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("incomplete uploads on the server: %v; want exactly %v (the other keys' uploads kept)", left, want)
	}
}
