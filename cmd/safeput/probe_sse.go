package main

import (
	"bytes"
	"crypto/rand"

	"github.com/safeput/safeput/store"
)

// sseRule names the probe row of one server-side encryption mode.
func sseRule(mode string) string { return mode + " on PUT" }

// sseModes are the modes the probe asks for, in the table's order.
var sseModes = []string{"SSE-S3", "SSE-KMS", "SSE-C"}

// sse asks for each server-side encryption mode on a small PUT and says what the store did:
// honoured (its HEAD reports what was asked), refused (an error answer; the evidence has its
// status and code) or ignored (200, and the HEAD reports no or other encryption: the object was
// stored as it came, which the writer turns into EncryptionNotApplied).
func (p *prober) sse() {
	key := make([]byte, store.CustomerKeySize)
	_, _ = rand.Read(key)
	encs := map[string]store.Encryption{
		"SSE-S3":  {Type: store.SSES3},
		"SSE-KMS": {Type: store.SSEKMS, KMSKeyID: p.kmsKeyID},
		"SSE-C":   {Type: store.SSEC, CustomerKey: key},
	}
	for _, mode := range sseModes {
		asked := encs[mode]
		k := p.key("sse-" + mode)
		if _, ok := p.objects[k]; !ok {
			p.objects[k] = false // deleted at the end whatever the answer
		}
		_, err := p.st.PutObject(p.ctx, &store.PutObjectInput{Bucket: p.bucket, Key: k, Body: bytes.NewReader(p.data[:kib]),
			ContentLength: kib, Encryption: asked})
		if err != nil {
			p.row(sseRule(mode), "refused", evidence("PutObject", err))
			continue
		}
		if !p.objects[k] {
			p.rep.Created.Objects++
			p.objects[k] = true
		}
		var ssec store.CustomerKey
		if asked.Type == store.SSEC {
			ssec = key
		}
		head, err := p.st.HeadObject(p.ctx, &store.HeadObjectInput{Bucket: p.bucket, Key: k, SSECustomerKey: ssec})
		if err != nil && ssec != nil {
			// Refused with the key: the object may not be SSE-C at all; a plain HEAD tells.
			if plain, perr := p.st.HeadObject(p.ctx, &store.HeadObjectInput{Bucket: p.bucket, Key: k}); perr == nil {
				head, err = plain, nil
			}
		}
		switch {
		case err != nil:
			p.row(sseRule(mode), "unknown", "PutObject 200; "+evidence("HeadObject", err))
		case asked.Unmet(head.Encryption) == "":
			p.row(sseRule(mode), "honoured", "PutObject 200; HEAD reports "+head.Encryption.String())
		default:
			p.row(sseRule(mode), "ignored", "PutObject 200; HEAD reports "+head.Encryption.String())
			p.rep.Warnings = append(p.rep.Warnings, mode+" was ignored: the store answered 200 and stored the object unencrypted")
		}
	}
}
