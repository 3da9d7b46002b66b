package safeblob_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	sperrors "github.com/safeput/safeput/errors"

	_ "github.com/safeput/safeput/gocloud" // registers safes3://
)

// Example is the switch in a program that writes through gocloud.dev/blob: the URL's scheme.
// Compiled, not run (it needs a server); its body between the markers is the README's snippet,
// after the import line.
func Example() {
	ctx := context.Background()
	data := []byte("...")

	// --- README ---
	// Was: bkt, err := blob.OpenBucket(ctx, "s3://my-bucket?region=eu-west-1")
	bkt, err := blob.OpenBucket(ctx, "safes3://my-bucket?region=eu-west-1")
	if err != nil {
		return
	}
	defer bkt.Close()
	// Reads, List, Attributes, Copy, Delete, SignedURL: gocloud's s3blob. Writes: safeput.
	err = bkt.WriteAll(ctx, "reports/2026-12.csv", data, nil)
	var e *sperrors.Error
	if gcerrors.Code(err) == gcerrors.Internal && bkt.ErrorAs(err, &e) && e.Kind == sperrors.Integrity {
		return // the bytes did not land as sent (e.ObjectLeft: a damaged object is still there)
	}
	// --- end ---
}

// TestReadmeSnippetIsCompiled: the README's first snippet is the import and Example's body.
func TestReadmeSnippetIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, ok := strings.Cut(string(readme), "```go\nimport _ \"github.com/safeput/safeput/gocloud\" // registers safes3://\n\n")
	snippet, _, ok2 := strings.Cut(snippet, "```\n")
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok3 := strings.Cut(string(src), "\t// --- README ---\n")
	body, _, ok4 := strings.Cut(body, "\t// --- end ---\n")
	if !ok || !ok2 || !ok3 || !ok4 {
		t.Fatal("the README's snippet or Example's markers are missing")
	}
	var unindented []string
	for line := range strings.Lines(body) {
		unindented = append(unindented, strings.TrimPrefix(line, "\t"))
	}
	if got := strings.Join(unindented, ""); got != snippet {
		t.Fatalf("the README's snippet differs from Example's body:\nREADME:\n%s\nexample:\n%s", snippet, got)
	}
}
