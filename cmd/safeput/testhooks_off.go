//go:build !safeput_faults

package main

import (
	"github.com/spf13/pflag"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/storetest/faulty"
)

// testHooks of the release build: no --fault, no --pause (see testhooks_on.go).
type testHooks struct{}

func (testHooks) register(*pflag.FlagSet) {}

func (testHooks) faults() ([]faulty.Rule, error) { return nil, nil }

func (testHooks) pauses(st store.Store) (store.Store, error) { return st, nil }
