package frontend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// renewing hands a store the keys of a connection whose keys expire (an assumed role, SSO,
// a credential_process or web identity that says when), resolving the connection again as
// they near their end, as the SDKs' credential caches do: a write longer than one session of
// a role (an hour, by default) goes on signing with new keys instead of failing when its
// first keys expire.
type renewing struct {
	conn Conn

	mu        sync.Mutex
	keys      Resolved
	due       time.Time // when keys are to be renewed (renewAt, taken when they came); zero: never
	nextTry   time.Time // after a failed renewal, none before this
	lastError error
}

// retryRenewAfter spaces renewals that fail while the keys in hand still work, so a store that
// cannot reach STS does not ask again for every request it signs.
const retryRenewAfter = time.Minute

func newRenewing(c Conn, r Resolved) *renewing {
	return &renewing{conn: c, keys: r, due: renewAt(r.Expires)}
}

// current returns keys to sign with now: the ones in hand until they near their end, then new
// ones. A failed renewal keeps the keys in hand while they still work and is tried again
// later; once they have expired, it is the error.
func (k *renewing) current() (Resolved, error) {
	r, _, err := k.currentDue()
	return r, err
}

// currentDue is current with the keys' renewal time.
func (k *renewing) currentDue() (Resolved, time.Time, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, err := k.renew()
	return r, k.due, err
}

// renew is current's work; k.mu is held.
func (k *renewing) renew() (Resolved, error) {
	now := time.Now()
	if !k.due.IsZero() && !now.Before(k.due) && !now.Before(k.nextTry) {
		r, err := k.conn.Resolve()
		if err == nil && !r.Expires.IsZero() && !now.Before(r.Expires) {
			err = errors.New("the keys resolved again have already expired")
		}
		if err == nil {
			k.keys, k.due, k.nextTry, k.lastError = r, renewAt(r.Expires), time.Time{}, nil
			return r, nil
		}
		k.nextTry, k.lastError = now.Add(retryRenewAfter), err
	}
	if k.keys.Expires.IsZero() || now.Before(k.keys.Expires) {
		return k.keys, nil
	}
	err := k.lastError
	if err == nil {
		err = errors.New("no renewal was tried")
	}
	return Resolved{}, fmt.Errorf("keys expired at %s and were not renewed: %w", k.keys.Expires.UTC().Format(time.RFC3339), err)
}

// awsRenewing is renewing as an aws-sdk-go-v2 credentials provider.
type awsRenewing struct{ k *renewing }

// Retrieve reports the keys' renewal time as their expiry, so a credentials cache put around this
// provider asks again when they are due, not when they stop working.
func (p awsRenewing) Retrieve(context.Context) (aws.Credentials, error) {
	r, due, err := p.k.currentDue()
	if err != nil {
		return aws.Credentials{}, err
	}
	return aws.Credentials{AccessKeyID: r.AccessKey, SecretAccessKey: r.SecretKey, SessionToken: r.SessionToken,
		Source: "safeput renewing", CanExpire: !due.IsZero(), Expires: due}, nil
}

// minioRenewing is renewing as a minio-go credentials provider; IsExpired says when the keys in
// hand are due for renewal, so minio-go's Credentials asks again then.
type minioRenewing struct{ k *renewing }

func (p minioRenewing) Retrieve() (miniocreds.Value, error) { return p.RetrieveWithCredContext(nil) }

func (p minioRenewing) RetrieveWithCredContext(*miniocreds.CredContext) (miniocreds.Value, error) {
	r, err := p.k.current()
	if err != nil {
		return miniocreds.Value{}, err
	}
	return miniocreds.Value{AccessKeyID: r.AccessKey, SecretAccessKey: r.SecretKey, SessionToken: r.SessionToken,
		Expiration: r.Expires, SignerType: miniocreds.SignatureV4}, nil
}

func (p minioRenewing) IsExpired() bool {
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	return !p.k.due.IsZero() && !time.Now().Before(p.k.due)
}
