// Package otlpcost holds two programs that differ only by the official OTLP exporters, for
// TestOTLPEncoderAgainstExporters (bench/otlp_test.go) to build, run and compare: sdk is the
// OpenTelemetry SDK as the CLI links it with protowire, all its own encoder adds; official adds
// otlptracehttp and otlpmetrichttp, the exporters the CLI would otherwise use.
package otlpcost

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// PrintRSS prints the process's resident memory (Linux's VmRSS line of /proc/self/status), or
// "VmRSS: unknown" where there is none.
func PrintRSS() {
	f, err := os.Open("/proc/self/status")
	if err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "VmRSS:") {
				fmt.Println(s.Text())
				return
			}
		}
	}
	fmt.Println("VmRSS: unknown")
}
