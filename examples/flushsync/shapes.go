package flushsync

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/safeput/safeput/writer"
)

// ChunkManager is the whole-buffer shape flush code already calls (Milvus's
// ChunkManager.Write(ctx, path, []byte) error), implemented on safeput. The error it returns
// wraps a *errors.Error, so errors.As / errors.Classify work on it unchanged, and the callers'
// retry loop (retry.Handle with IsNonRetryableErr) can become Classify(err).Retryable().
type ChunkManager struct {
	Uploader *writer.Uploader // shared by everything writing to the store
	Bucket   string
	// Options are added to the Uploader's for every write.
	Options []func(*writer.Options)
}

// Write uploads content to path and returns nil only when it landed verified.
func (c *ChunkManager) Write(ctx context.Context, path string, content []byte) error {
	if _, err := c.Uploader.Upload(ctx, c.Bucket, path, bytes.NewReader(content), c.Options...); err != nil {
		// Wrapped with the caller's context; %w keeps the *errors.Error reachable.
		return fmt.Errorf("chunk manager: write %s (%d bytes): %w", path, len(content), err)
	}
	return nil
}

// ObjectStorage is the reader shape (Milvus's ObjectStorage.PutObject(ctx, bucket, key,
// io.Reader, size) error), implemented on safeput.
type ObjectStorage struct {
	Uploader *writer.Uploader // shared by everything writing to the store
	// Options are added to the Uploader's for every write.
	Options []func(*writer.Options)
}

// PutObject uploads size bytes from reader. A negative size means unknown (minio-go's
// convention): the object is then streamed with a fixed part size. A reader that is shorter or
// longer than a known size fails (Permanent) and nothing is committed.
func (o *ObjectStorage) PutObject(ctx context.Context, bucket, key string, reader io.Reader, size int64) error {
	opts := o.Options
	if size >= 0 {
		// A reader that reports a different size itself is refused by Upload (Permanent).
		opts = append(append([]func(*writer.Options){}, o.Options...), func(o *writer.Options) { o.Size = size })
	}
	if _, err := o.Uploader.Upload(ctx, bucket, key, reader, opts...); err != nil {
		return fmt.Errorf("object storage: put %s/%s (size %d): %w", bucket, key, size, err)
	}
	return nil
}
