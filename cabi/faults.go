package cabi

import (
	"errors"
	"fmt"

	"github.com/safeput/safeput/cabi/internal/testhook"
	"github.com/safeput/safeput/store"
)

// testFaults reads the test_faults field: what wraps the store with faults for tests, refused
// unless this process is a test build (see testhook and faults_tag.go).
func testFaults(spec string) (func(store.Store) store.Store, error) {
	if spec == "" {
		return nil, nil
	}
	hook := testhook.FaultsHook()
	if hook == nil {
		return nil, errors.New("config: test_faults is only honoured by a test build (tag safeput_faults)")
	}
	wrap, err := hook(spec)
	if err != nil {
		return nil, fmt.Errorf("config: test_faults %w", err)
	}
	return wrap, nil
}
