package fixture_test

import (
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/wirekit"
)

const raceEnabled = false

type harness struct{}

func (harness) run(t *testing.T) { _ = wirekit.Proxied }

func deeper(t *testing.T) { s3test.Require(t) }
