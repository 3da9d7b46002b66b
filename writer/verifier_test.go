package writer

import (
	"context"
	"fmt"
	"testing"

	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// untouchedStore is a store no request reaches: a method called on it panics.
type untouchedStore struct{ store.Store }

// TestVerifierDecidesAsTheWriter: the verifier asks its decisions (afterHead, judged, atKey) of
// a decider it builds from its own settings and the upload's fate, not the Writer's. On every
// combination of what those decisions read, each must come out as the Writer's decider says.
func TestVerifierDecidesAsTheWriter(t *testing.T) {
	evidence := []integrity.Evidence{
		{Method: verify.MethodCRC64NVME},
		{Method: verify.MethodLengthOnly},
		{Method: verify.MethodCRC64NVME, Mismatch: &integrity.Mismatch{What: "checksum"}},
	}
	judgements := []judgement{
		{method: verify.MethodCRC64NVME},
		{method: verify.MethodLengthOnly},
		{mismatch: errMismatch},
	}
	headErrs := []error{nil, errNotFound, errHeadDenied}
	for _, createOnly := range []bool{false, true} {
		for _, allowWeak := range []bool{false, true} {
			for _, readBack := range []bool{false, true} {
				for _, fate := range [][2]bool{{false, false}, {false, true}, {true, true}} {
					name := fmt.Sprintf("createOnly=%v,allowWeak=%v,readBack=%v,lost=%v,gone=%v", createOnly, allowWeak, readBack, fate[0], fate[1])
					w, err := New(context.Background(), untouchedStore{}, "b", "k", func(o *Options) {
						o.CreateOnly, o.AllowWeakVerification, o.ReadBack = createOnly, allowWeak, readBack
					})
					if err != nil {
						t.Fatal(err)
					}
					w.mu.Lock()
					w.session.completeLost, w.session.completeGone = fate[0], fate[1]
					w.mu.Unlock()
					mine, writers := w.verifier.decider(), w.decider()
					if mine.completeLost != writers.completeLost {
						t.Errorf("%s: completeLost %v, the Writer's %v", name, mine.completeLost, writers.completeLost)
					}
					for _, ev := range evidence {
						for _, may := range []bool{false, true} {
							if got, want := mine.afterHead(ev, may), writers.afterHead(ev, may); got != want {
								t.Errorf("%s: afterHead(%+v, %v) = %v, the Writer's %v", name, ev, may, got, want)
							}
						}
					}
					for _, j := range judgements {
						for _, ours := range []bool{false, true} {
							if got, want := mine.judged(j, ours), writers.judged(j, ours); got != want {
								t.Errorf("%s: judged(%+v, %v) = %v, the Writer's %v", name, j, ours, got, want)
							}
						}
						for _, herr := range headErrs {
							for _, multipart := range []bool{false, true} {
								for _, assembled := range []bool{false, true} {
									gotFinding, gotOurs := mine.atKey(herr, j, multipart, assembled)
									wantFinding, wantOurs := writers.atKey(herr, j, multipart, assembled)
									if gotFinding != wantFinding || gotOurs != wantOurs {
										t.Errorf("%s: atKey(%v, %+v, %v, %v) = %v, %v; the Writer's %v, %v", name, herr, j, multipart, assembled, gotFinding, gotOurs, wantFinding, wantOurs)
									}
								}
							}
						}
					}
					w.cancel()
				}
			}
		}
	}
}
