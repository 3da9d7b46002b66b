package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
)

type plain struct{ store.Store }

type atEndpoint struct {
	store.Store
	url string
}

func (s atEndpoint) Endpoint() string { return s.url }

// wrapping is a metrics or tracing wrapper as a user writes one: it embeds the store it sends to,
// which hides that store's optional methods, and keeps them visible through Unwrap.
type wrapping struct{ store.Store }

func (w wrapping) Unwrap() store.Store { return w.Store }

// loop is a wrapper that unwraps to itself: Find must still end.
type loop struct{ store.Store }

func (l *loop) Unwrap() store.Store { return l }

// A capability is found on the store itself, through any depth of wrappers, and on the
// outermost store that has it; a store without it, a nil store and a cycle of wrappers give none.
func TestFind(t *testing.T) {
	inner := atEndpoint{url: "http://inner"}
	for _, c := range []struct {
		name string
		st   store.Store
		want string // "" = not found
	}{
		{"the store itself", inner, "http://inner"},
		{"one wrapper", wrapping{inner}, "http://inner"},
		{"three wrappers", wrapping{wrapping{wrapping{inner}}}, "http://inner"},
		{"a wrapper that has it too is found first", wrapping{atEndpoint{wrapping{inner}, "http://outer"}}, "http://outer"},
		{"embedding without Unwrap hides it", plain{inner}, ""},
		{"none", wrapping{plain{}}, ""},
		{"nil", nil, ""},
		{"a cycle", &loop{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, ok := store.Find[store.Endpointer](c.st)
			got := ""
			if ok {
				got = e.Endpoint()
			}
			if got != c.want || ok != (c.want != "") {
				t.Fatalf("Find = %q, %v; want %q", got, ok, c.want)
			}
		})
	}
}

// TestValidateEveryInput: Validate reaches each input's own check (an empty bucket is refused as
// ErrInvalidInput) instead of the unknown-type fallback, and a nil input is refused by name.
func TestValidateEveryInput(t *testing.T) {
	for op, err := range map[string]error{
		"PutObject":               store.Validate(&store.PutObjectInput{}),
		"CreateMultipartUpload":   store.Validate(&store.CreateMultipartUploadInput{}),
		"UploadPart":              store.Validate(&store.UploadPartInput{}),
		"ListParts":               store.Validate(&store.ListPartsInput{}),
		"CompleteMultipartUpload": store.Validate(&store.CompleteMultipartUploadInput{}),
		"AbortMultipartUpload":    store.Validate(&store.AbortMultipartUploadInput{}),
		"HeadObject":              store.Validate(&store.HeadObjectInput{}),
		"GetObject":               store.Validate(&store.GetObjectInput{}),
		"DeleteObject":            store.Validate(&store.DeleteObjectInput{}),
		"ListMultipartUploads":    store.Validate(&store.ListMultipartUploadsInput{}),
	} {
		if !errors.Is(err, store.ErrInvalidInput) || !strings.Contains(err.Error(), "empty bucket") {
			t.Errorf("%s: %v", op, err)
		}
	}
	if err := store.Validate((*store.UploadPartInput)(nil)); !errors.Is(err, store.ErrInvalidInput) || !strings.Contains(err.Error(), "UploadPart: nil input") {
		t.Errorf("nil UploadPartInput: %v", err)
	}
}
