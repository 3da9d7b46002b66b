package safeobjstore_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/thanos-io/objstore"

	sperrors "github.com/safeput/safeput/errors"

	safeobjstore "github.com/safeput/safeput/objstore"
)

// ExampleNewBucket is the swap in a Thanos, Loki, Mimir or Cortex process: the same YAML, logger,
// component name and round-tripper wrapper that went to objstore's s3.NewBucket. Compiled, not run
// (it needs a server); its body between the markers is objstore/README.md's snippet.
func ExampleNewBucket() {
	ctx := context.Background()
	logger := log.NewNopLogger()
	conf := []byte("bucket: blocks\nendpoint: s3.example.com\nregion: eu-west-1\n")
	wrapRoundTripper := func(rt http.RoundTripper) http.RoundTripper { return rt }
	var block *os.File

	// --- README ---
	// Was: bkt, err := s3.NewBucket(logger, conf, "thanos-compactor", wrapRoundTripper)
	bkt, err := safeobjstore.NewBucket(logger, conf, "thanos-compactor", wrapRoundTripper)
	if err != nil {
		return // a bad config, or a setting safeput cannot honour for writes (disable_multipart, ...)
	}
	defer bkt.Close()
	// Reads, Iter, Delete: objstore's S3 bucket. Upload: safeput, nil only when verified at the key.
	var b objstore.Bucket = bkt
	err = b.Upload(ctx, "01J2/chunks/000001", block)
	if sperrors.KindOf(err) == sperrors.Integrity {
		return // the bytes did not land as sent, even after a re-send
	}
	// --- end ---
}

// TestReadmeSnippetIsCompiled: this module's README (objstore/README.md), where the Thanos section
// lives, shows ExampleNewBucket's body, and the root README links to it.
func TestReadmeSnippetIsCompiled(t *testing.T) {
	root, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(root), "(objstore/README.md)") {
		t.Error("the root README.md does not link to objstore/README.md")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "# safeobjstore: safeput for Thanos, Loki, Mimir and Cortex\n")
	_, snippet, ok2 := strings.Cut(section, "```go\n")
	snippet, _, ok3 := strings.Cut(snippet, "```\n")
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok4 := strings.Cut(string(src), "\t// --- README ---\n")
	body, _, ok5 := strings.Cut(body, "\t// --- end ---\n")
	if !ok || !ok2 || !ok3 || !ok4 || !ok5 {
		t.Fatal("objstore/README.md's Thanos snippet or ExampleNewBucket's markers are missing")
	}
	var unindented []string
	for line := range strings.Lines(body) {
		unindented = append(unindented, strings.TrimPrefix(line, "\t"))
	}
	if got := strings.Join(unindented, ""); got != snippet {
		t.Fatalf("objstore/README.md's snippet differs from ExampleNewBucket's body:\nREADME:\n%s\nexample:\n%s", snippet, got)
	}
}
