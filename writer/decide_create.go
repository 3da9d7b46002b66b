package writer

import "strings"

// How a create-only write keeps its commit (PutObject or CompleteMultipartUpload) off an object
// another writer put at the key, in the style of decide.go: no request, lock or log here.
//
// If-None-Match: * is sent at every profile: where the store honours it, it is the only check
// that closes the race between two writers of one new key (two flush nodes after a failover);
// a HEAD before the commit cannot, since the other writer may commit between the HEAD and ours.
// A store that does not support it answers 501/NotImplemented (store.Unsupported), and the
// commit is sent again without it (optional.go). But a store may also ignore the header and
// commit over the key, and only a profile that names the store says it does not: so unless the
// profile says the store honours the header on this request, the key is also checked free with
// a HEAD first, which finds an object already there, if not one committed during the race.

// createGuard is how one create-only commit is guarded.
type createGuard struct {
	header    bool // send If-None-Match: *
	headFirst bool // check the key free with a HEAD before the commit
	// unguarded: the store is not known to refuse this commit when the key is taken, so an
	// object found at the key after it may be another writer's, committed over or after ours.
	unguarded bool
}

// guardCreate decides how a commit is guarded: createOnly is Options.CreateOnly, refused that
// the store has answered the header "not supported" (this write or an earlier one of the
// Uploader), honoured that the profile says the store honours it on this request.
func guardCreate(createOnly, refused, honoured bool) createGuard {
	switch {
	case !createOnly:
		return createGuard{}
	case refused:
		return createGuard{headFirst: true, unguarded: true}
	case honoured:
		return createGuard{header: true}
	default:
		return createGuard{header: true, headFirst: true, unguarded: true}
	}
}

// othersAtKey decides on the HEAD after a create-only commit that found an object other than the
// one written (mismatch): true when it is to be taken for another writer's, so the write fails
// Precondition and leaves it; false when it is this write's own damaged commit (ownCommit: the
// HEAD's ETag is the one the commit answered, or the multipart ETag of this write's parts as the
// store holds them), deleted as corrupt. Only an unguarded commit can be followed by another
// writer's; deleting an object this write cannot tell its own would delete the winner's.
func othersAtKey(unguarded, mismatch, ownCommit bool) bool {
	return unguarded && mismatch && !ownCommit
}

// sameETag reports whether two ETags, as stores send them (quoted or not, W/-prefixed or not),
// are one non-empty ETag.
func sameETag(a, b string) bool {
	trim := func(s string) string { return strings.Trim(strings.TrimPrefix(strings.TrimSpace(s), "W/"), `"`) }
	a, b = trim(a), trim(b)
	return a != "" && strings.EqualFold(a, b)
}
