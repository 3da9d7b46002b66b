//go:build !race

package writer_test

const raceEnabled = false
