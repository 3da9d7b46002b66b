//go:build safeput_faults

package main

import (
	"github.com/spf13/pflag"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/faulty"
)

// The tests build the CLI with -tags safeput_faults (main_test.go's TestMain) to get two hidden
// flags: --fault injects store faults a real server will not produce on demand, --pause widens a
// write's windows for the kill test. The release build has neither (testhooks_off.go), so a user
// cannot reach the fault injector through the CLI.
func (a *app) addTestFlags(f *pflag.FlagSet) {
	f.StringVar(&a.g.fault, "fault", "", "inject faults (tests only)")
	_ = f.MarkHidden("fault")
	f.StringVar(&a.g.pause, "pause", "", "wait before store operations (tests only)")
	_ = f.MarkHidden("pause")
}

func (a *app) testFaults() ([]faulty.Rule, error) { return parseFaults(a.g.fault) }

func (a *app) testPauses(st store.Store) (store.Store, error) {
	pauses, err := parsePauses(a.g.pause)
	if err != nil || len(pauses) == 0 {
		return st, err
	}
	return &pausingStore{Store: st, pauses: pauses}, nil
}
