//go:build safeput_faults

package main

import (
	"github.com/spf13/pflag"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
)

// testHooks are the test build's two hidden flags. The tests build the CLI with
// -tags safeput_faults (main_test.go's TestMain): --fault injects store faults a real server
// will not produce on demand, --pause widens a write's windows for the kill test. The release
// build has neither (testhooks_off.go), so a user cannot reach the fault injector through the CLI.
type testHooks struct{ fault, pause string }

func (h *testHooks) register(f *pflag.FlagSet) {
	f.StringVar(&h.fault, "fault", "", "inject faults (tests only)")
	_ = f.MarkHidden("fault")
	f.StringVar(&h.pause, "pause", "", "wait before store operations (tests only)")
	_ = f.MarkHidden("pause")
}

// faults reads --fault (faulty.Parse: comma-separated OP:FAULT[:N] items) and returns what wraps
// the store with them, nil when there are none.
func (h *testHooks) faults() (func(store.Store) store.Store, error) {
	rules, err := faulty.Parse(h.fault)
	if err != nil {
		return nil, usageErr("--fault %v", err)
	}
	if len(rules) == 0 {
		return nil, nil
	}
	return func(st store.Store) store.Store { return faulty.New(st, rules...) }, nil
}

func (h *testHooks) pauses(st store.Store) (store.Store, error) {
	pauses, err := parsePauses(h.pause)
	if err != nil || len(pauses) == 0 {
		return st, err
	}
	return &pausingStore{Store: st, pauses: pauses}, nil
}
