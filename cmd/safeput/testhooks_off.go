//go:build !safeput_faults

package main

import (
	"github.com/spf13/pflag"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/faulty"
)

// The release build: no --fault, no --pause (see testhooks_on.go).

func (*app) addTestFlags(*pflag.FlagSet) {}

func (*app) testFaults() ([]faulty.Rule, error) { return nil, nil }

func (*app) testPauses(st store.Store) (store.Store, error) { return st, nil }
