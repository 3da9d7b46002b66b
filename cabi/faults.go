package cabi

import (
	"errors"
	"fmt"

	"github.com/safeput/safeput/cabi/internal/testhook"
	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/store/storetest/faulty"
)

// testFaults reads the test_faults field: store faults for tests, refused unless this process
// allowed them (see testhook and faults_tag.go).
func testFaults(spec string) ([]faulty.Rule, error) {
	if spec == "" {
		return nil, nil
	}
	if !testhook.FaultsAllowed() {
		return nil, errors.New("config: test_faults is only honoured by a test build (tag safeput_faults)")
	}
	rules, err := frontend.ParseFaults(spec)
	if err != nil {
		return nil, fmt.Errorf("config: test_faults %w", err)
	}
	return rules, nil
}
