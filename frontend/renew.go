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
// web identity, container or instance credentials, a credential_process that says when),
// asking the SDK's credentials cache for new ones as they near their end: a write longer than
// one session of a role (an hour, by default) goes on signing with new keys instead of failing
// when its first keys expire. The cache alone renews only once keys have expired, which a
// request signed just before and sent just after would find; renewing asks while a quarter of
// their life (at most refreshBefore) is left. Both adapters sign through one renewing.
type renewing struct {
	creds *aws.CredentialsCache

	mu        sync.Mutex
	keys      Resolved
	due       time.Time // when keys are to be renewed (renewAt, taken when they came); zero: never
	nextTry   time.Time // after a failed renewal, none before this
	lastError error
}

// retryRenewAfter spaces renewals that fail while the keys in hand still work, so a store that
// cannot reach STS does not ask again for every request it signs.
const retryRenewAfter = time.Minute

// refreshBefore is how long before expiry keys are given up for new ones, long enough for a
// request signed with them to arrive; a quarter of what is left for keys that live shorter.
const refreshBefore = 15 * time.Minute

// renewAt is when keys that expire at expires are given up for new ones: refreshBefore ahead,
// or a quarter of what is left for keys that live shorter. Zero (never) for keys without expiry.
func renewAt(expires time.Time) time.Time {
	if expires.IsZero() {
		return time.Time{}
	}
	return expires.Add(-min(refreshBefore, time.Until(expires)/4))
}

func newRenewing(r Resolved) *renewing {
	return &renewing{creds: r.creds, keys: r, due: renewAt(r.Expires)}
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
		// The cache may hold newer keys already (another store of the same connection renewed
		// them); if it holds these, it keeps them until they expire: drop them so it asks anew.
		v, err := retrieve(context.Background(), k.creds)
		if err == nil && v.AccessKeyID == k.keys.AccessKey && v.SessionToken == k.keys.SessionToken && v.Expires.Equal(k.keys.Expires) {
			k.creds.Invalidate()
			v, err = retrieve(context.Background(), k.creds)
		}
		r := k.keys
		r.AccessKey, r.SecretKey, r.SessionToken, r.Expires = v.AccessKeyID, v.SecretAccessKey, v.SessionToken, time.Time{}
		if v.CanExpire {
			r.Expires = v.Expires
		}
		if err == nil && !r.Expires.IsZero() && !now.Before(r.Expires) {
			err = errors.New("the keys resolved again have already expired")
		}
		if err != nil {
			err = fmt.Errorf("renewing credentials from %s: %w", k.keys.source, err)
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
