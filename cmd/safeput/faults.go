package main

import (
	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/store/storetest/faulty"
)

// parseFaults reads the test build's hidden --fault flag (see frontend.ParseFaults). It exists so
// tests can drive every exit code through a real server. Only testhooks_on.go calls it, so the
// release build does not link it.
func parseFaults(spec string) ([]faulty.Rule, error) {
	rules, err := frontend.ParseFaults(spec)
	if err != nil {
		return nil, usageErr("--fault %v", err)
	}
	return rules, nil
}
