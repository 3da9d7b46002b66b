// Command safeput writes objects to S3-compatible storage so that a write either lands exactly as
// sent, verified, or fails with a classified error and an exit code that says which. It also
// verifies stored objects against local files, probes an endpoint's multipart rules, sweeps
// incomplete multipart uploads, settles the uploads a crashed put --journal left (recover), and
// replays the failures it exists for in an offline demo.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without os.Exit, so a panic anywhere below still becomes exit 1 with a message
// instead of a stack dump and an arbitrary status.
func run(args []string, stdin *os.File, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			_, _ = fmt.Fprintf(stderr, "safeput: internal error: %v\n", r)
			code = exitInternal
		}
	}()
	// SIGINT/SIGTERM cancel the context: the writer aborts its upload on a detached context, so
	// nothing is left behind, and the command exits 8.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp(stdin, stdout, stderr)
	app.limitGCToBudget = true
	app.hugePages = true
	return app.execute(ctx, args)
}
