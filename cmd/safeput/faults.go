package main

import (
	"github.com/safeput/safeput/internal/frontend"
	"github.com/safeput/safeput/store/faulty"
)

// parseFaults reads the hidden --fault flag (see frontend.ParseFaults). It exists so tests can
// drive every exit code through a real server; it is hidden from --help.
func parseFaults(spec string) ([]faulty.Rule, error) {
	rules, err := frontend.ParseFaults(spec)
	if err != nil {
		return nil, usageErr("--fault %v", err)
	}
	return rules, nil
}
