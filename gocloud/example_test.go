package safeblob_test

import (
	"context"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	sperrors "github.com/safeput/safeput/errors"

	_ "github.com/safeput/safeput/gocloud" // registers safes3://
)

// Example is the switch in a program that writes through gocloud.dev/blob: the URL's scheme.
// Compiled, not run (it needs a server); its body between the markers is the README's snippet.
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
		return // the bytes did not land as sent; nothing is left at the key
	}
	// --- README ---
}
