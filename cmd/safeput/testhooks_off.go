//go:build !safeput_faults

package main

import (
	"github.com/spf13/pflag"

	"github.com/safeput/safeput/store"
)

// testHooks of the release build: no --fault, no --pause (see testhooks_on.go), and nothing of the
// test support under storetest linked in (TestReleaseBuildHasNoTestSupport).
type testHooks struct{}

func (testHooks) register(*pflag.FlagSet) {}

func (testHooks) faults() (func(store.Store) store.Store, error) { return nil, nil }

func (testHooks) pauses(st store.Store) (store.Store, error) { return st, nil }
