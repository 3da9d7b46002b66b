package main

import (
	"context"
	"strings"
	"time"

	"github.com/safeput/safeput/store"
)

// parsePauses reads the test build's hidden --pause flag: comma-separated OP:DURATION items. Each call of OP
// (UploadPart, CompleteMultipartUpload, HeadObject, ListParts, CreateMultipartUpload) first
// waits DURATION. It exists so the kill test can land a SIGKILL inside the narrow windows of a
// write (a part in flight, between the last part and Complete, between Complete and the HEAD).
func parsePauses(spec string) (map[string]time.Duration, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	m := map[string]time.Duration{}
	for _, item := range strings.Split(spec, ",") {
		op, d, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return nil, usageErr("--pause %q: want OP:DURATION", item)
		}
		dur, err := time.ParseDuration(d)
		if err != nil || dur < 0 {
			return nil, usageErr("--pause %q: bad duration", item)
		}
		m[op] = dur
	}
	return m, nil
}

// journalStore is newStore for the commands that journal (put, recover), wrapped by --pause in
// the test build; and the endpoint identity their journal records carry.
func (a *app) journalStore() (store.Store, string, error) {
	st, err := a.newStore()
	if err != nil {
		return nil, "", err
	}
	if st, err = a.g.hooks.pauses(st); err != nil {
		return nil, "", err
	}
	id, err := a.endpointID()
	if err != nil {
		return nil, "", err
	}
	return st, id, nil
}

// endpointID is the identity journal records carry for the store of this run: the endpoint URL
// (the AWS regional endpoint when none is configured).
func (a *app) endpointID() (string, error) {
	r, err := a.conn().Resolve()
	if err != nil {
		return "", usageErr("%v", err)
	}
	if r.Endpoint == "" {
		return "https://s3." + r.Region + ".amazonaws.com", nil
	}
	return strings.TrimRight(r.Endpoint, "/"), nil
}

// pausingStore waits before the operations it is told to, then calls the real store.
type pausingStore struct {
	store.Store
	pauses map[string]time.Duration
}

// Unwrap keeps the real store's endpoint and TLS facts visible (store.Find).
func (p *pausingStore) Unwrap() store.Store { return p.Store }

func (p *pausingStore) wait(ctx context.Context, op string) error {
	d := p.pauses[op]
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pausingStore) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if err := p.wait(ctx, "CreateMultipartUpload"); err != nil {
		return nil, err
	}
	return p.Store.CreateMultipartUpload(ctx, in)
}

func (p *pausingStore) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	if err := p.wait(ctx, "UploadPart"); err != nil {
		return nil, err
	}
	return p.Store.UploadPart(ctx, in)
}

func (p *pausingStore) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	if err := p.wait(ctx, "ListParts"); err != nil {
		return nil, err
	}
	return p.Store.ListParts(ctx, in)
}

func (p *pausingStore) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	if err := p.wait(ctx, "CompleteMultipartUpload"); err != nil {
		return nil, err
	}
	return p.Store.CompleteMultipartUpload(ctx, in)
}

func (p *pausingStore) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	if err := p.wait(ctx, "HeadObject"); err != nil {
		return nil, err
	}
	return p.Store.HeadObject(ctx, in)
}
