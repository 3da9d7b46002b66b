package multipart

import (
	"net/url"
	"slices"
	"strings"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/store"
)

// DefaultProfile is the profile used when none is named: the intersection of all the others.
const DefaultProfile = "strict"

// How the numbers below were read (facts and sources: docs/research/providers.md):
//   - Vendors that write "MB/GB/TB" are ambiguous about units. A minimum is read as binary and a
//     maximum as decimal, the stricter reading each time, so a layout legal under the profile is
//     legal under either reading ("5 GB" max part => 5e9, "5 MB" min part => 5 MiB).
//   - An unverified capability is false: the writer then falls back (a HEAD before a create-only
//     commit besides its If-None-Match, Content-MD5, length and local hash) instead of relying on
//     a header the store may reject or ignore.
//   - An unverified size limit takes AWS's value, which S3-compatible stores copy.
//   - MaxParts is never above 10,000: S3 part numbers stop there, and so does store.MaxPartNumber.
//
// awsChecksums is AWS's algorithm x type matrix: CRC64NVME is always FULL_OBJECT, SHA-1/SHA-256
// have no FULL_OBJECT type, CRC32/CRC32C have both.
// https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/s3/aws.sdk.kotlin.services.s3.model/-put-object-request/checksum-crc64-nvme.html
// https://docs.rs/crate/aws-s3-transfer/latest/source/src/types/checksum.rs
var awsChecksums = ChecksumSupport{
	CRC32: FullObject | Composite, CRC32C: FullObject | Composite, CRC64NVME: FullObject,
	SHA1: Composite, SHA256: Composite,
}

// profiles is the one table the planner reads. Keep it sorted by name; strict is derived.
var profiles = []Rules{
	// Amazon S3.
	// Limits: https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html (5 MiB..5 GiB,
	// 10,000 parts, 10,000 x 5 GiB object); single PUT "5 GB":
	// https://docs.aws.amazon.com/AmazonS3/latest/userguide/upload-objects.html
	// Checksums: https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/s3/aws.sdk.kotlin.services.s3.model/-put-object-request/checksum-algorithm.html
	// Conditional writes (PUT and Complete): https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
	// ETag is the body MD5 for PutObject: https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html
	// HEAD checksum mode: https://docs.aws.amazon.com/sdkref/latest/guide/feature-dataintegrity.html
	{Name: "aws", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * bytesize.GiB, MaxParts: 10000,
		MaxObjectSize: 10000 * 5 * bytesize.GiB, MaxSinglePut: 5 * gb,
		Checksums: awsChecksums, ContentMD5: true, ConditionalPut: true, ConditionalComplete: true,
		SinglePutETagMD5: true, MultipartETagMD5: true, HeadChecksums: true},

	// Backblaze B2 (S3 API). Limits "5 MB".."5 GB", 10,000 parts, last part >= 1 byte:
	// https://backblaze.com/docs/cloud-storage-create-large-files-with-the-native-api
	// Max object 10 TB, single PUT 5 GB: https://github.com/encryptio/git-annex-remote-b2/issues/10
	// Checksum header rejected (Jan 2025): https://github.com/boto/s3transfer/issues/327 ; a 2026
	// report of CRC32 in one region is not enough to rely on. Conditional PUT -> NotImplemented:
	// https://github.com/sathinduga/obsidian-s3-sync-and-backup/pull/84 . Content-MD5 unverified.
	{Name: "b2", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * gb, MaxParts: 10000,
		MaxObjectSize: 10 * tb, MaxSinglePut: 5 * gb, NonEmptyLastPart: true},

	// Ceph RGW. rgw_multipart_min_part_size 5 MiB, rgw_multipart_part_upload_limit 10,000,
	// rgw_max_put_size 5 GiB per part and per PUT (ceph/ceph src/common/options); no object cap
	// beyond 10,000 x 5 GiB. Measured on the test command's RGW (Debian 16.2.15+ds-0+deb12u2;
	// `safeput probe` and TestConformance's server facts, storetest/testkit): x-amz-checksum-* headers are ignored (a wrong value
	// is accepted; nothing echoed, stored or returned by HEAD), Content-MD5 is checked (400
	// BadDigest), ETags are the body MD5 and MD5-of-part-MD5s-N (HEAD; the Complete answer's
	// ETag is empty), If-None-Match is honoured on PUT (412) and ignored on Complete. Newer
	// releases add checksums (https://github.com/ceph/ceph/pull/66493); they are not relied on.
	{Name: "ceph", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * bytesize.GiB, MaxParts: 10000,
		MaxObjectSize: 10000 * 5 * bytesize.GiB, MaxSinglePut: 5 * bytesize.GiB,
		ContentMD5: true, ConditionalPut: true, SinglePutETagMD5: true, MultipartETagMD5: true},

	// Tencent COS. 1 MB..5 GB parts, 10,000: https://www.tencentcloud.com/document/product/436/7750
	// Contiguous part numbers or 400 InvalidPart: https://tencentcloud.com/document/product/436/7742
	// Single PUT 5 GB: https://www.tencentcloud.com/document/product/436/14112 ; object 48.82 TB:
	// https://intl.cloud.tencent.com/document/product/436/13324 . Native CRC64-ECMA only; no-overwrite
	// is the vendor header x-cos-forbid-overwrite, not If-None-Match.
	{Name: "cos", MinPartSize: 1 * bytesize.MiB, MaxPartSize: 5 * gb, MaxParts: 10000,
		MaxObjectSize: 48820 * gb, MaxSinglePut: 5 * gb, ContiguousPartNumbers: true, ContentMD5: true},

	// DigitalOcean Spaces. 5 MiB..5 GB parts, 10,000, 5 GB PUT, 5 TB object:
	// https://docs.digitalocean.com/products/spaces/details/limits/ . Default SDK checksums broke
	// uploads (https://docs.digitalocean.com/reference/api/spaces-api): no checksums. Conditional
	// PUT only reported by a third party: unverified.
	{Name: "digitalocean", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * gb, MaxParts: 10000,
		MaxObjectSize: 5 * tb, MaxSinglePut: 5 * gb, ContentMD5: true},

	// Garage (v2.0.0). No minimum part size, part numbers need only increase
	// (deuxfleurs-org/garage src/api/s3/multipart.rs); no size limits found, so unlimited.
	// MaxParts 10,000: ListParts markers stop there (src/api/s3/api_server.rs) and so do S3 part
	// numbers. Checksums CRC32/CRC32C/SHA1/SHA256, composite (src/api/common/signature/checksum.rs);
	// no precondition code. Multipart ETag md5-of-md5s (docs/research/providers.md section 6, item 7).
	{Name: "garage", MinPartSize: 0, MaxPartSize: unlimited, MaxParts: 10000,
		MaxObjectSize: unlimited, MaxSinglePut: unlimited,
		Checksums:  ChecksumSupport{CRC32: Composite, CRC32C: Composite, SHA1: Composite, SHA256: Composite},
		ContentMD5: true, MultipartETagMD5: true},

	// Google Cloud Storage, XML API multipart. 5 MiB..5 GiB (per apache/arrow-rs-object-store
	// PR #803), parts 1..10,000: https://cloud.google.com/storage/docs/xml-api/put-object-multipart
	// 5 TiB object and single request: https://cloud.google.com/storage/quotas
	// No preconditions on XML MPU: https://cloud.google.com/storage/docs/multipart-uploads
	// Object has CRC32C, ETag not MD5: https://cloud.google.com/storage/docs/xml-api/post-object-complete
	// x-amz-checksum-* unverified (GCS uses x-goog-hash).
	{Name: "gcs", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * bytesize.GiB, MaxParts: 10000,
		MaxObjectSize: 5 * bytesize.TiB, MaxSinglePut: 5 * bytesize.TiB, ContentMD5: true},

	// MinIO. 5 MiB min, 10,000 parts (minio/minio cmd/utils.go); 5 GiB part, 5 TiB PUT, 50 TiB
	// object: https://docs.min.io/community/minio-object-store/operations/concepts/thresholds.html
	// If-None-Match on PUT: https://github.com/minio/minio/issues/20346 ; on Complete:
	// https://github.com/minio/minio/pull/19713 .
	// Measured on the test command's MinIO (github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c)
	// by `safeput probe` (TestProbe asserts it matches this profile) and the contract suite
	// (storetest, storetest/testkit): checksums as AWS except that CRC64NVME COMPOSITE is accepted too
	// (SHA256 FULL_OBJECT is refused at Create; SHA1 is not probed: AWS's composite kept); ETags
	// are MD5 and md5-of-md5s-N; HEAD returns stored checksums. Other differences safeput copes
	// with: a wrong x-amz-checksum-* is 400 XAmzContentChecksumMismatch (Integrity), not BadDigest;
	// Complete's answer names no checksum type (HEAD does); x-amz-mp-object-size is ignored;
	// Abort answers 204 for any upload id (gone or never existing), so only a listing confirms an
	// abort; ListMultipartUploads lists by prefix only for an exact key (a directory-like prefix
	// lists nothing; no prefix lists the bucket, unpaged) and leaves NextKeyMarker out of a
	// truncated page. CRC32C is preferred: MinIO spends more CPU checking a CRC64NVME than a
	// CRC32C or CRC32, and the client's CRC32C pass costs about what its CRC64NVME does (compare
	// the server's CPU time over `safeput put --provider minio --checksum X` for each X, data on
	// tmpfs, as BENCHMARKS.md's "server CPU s/GiB" column reads it).
	{Name: "minio", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * bytesize.GiB, MaxParts: 10000,
		MaxObjectSize: 50 * bytesize.TiB, MaxSinglePut: 5 * bytesize.TiB,
		Checksums:  ChecksumSupport{CRC32: FullObject | Composite, CRC32C: FullObject | Composite, CRC64NVME: FullObject | Composite, SHA1: Composite, SHA256: Composite},
		ContentMD5: true, ConditionalPut: true, ConditionalComplete: true,
		SinglePutETagMD5: true, MultipartETagMD5: true, HeadChecksums: true,
		PreferredChecksum: store.ChecksumCRC32C},

	// Huawei OBS. 100 KB..5 GB parts, 1..10,000: https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0099.html
	// 5 GB PUT, 48.8 TB object: https://support.huaweicloud.com/en-us/devg-obs/obs_06_0028.html
	// Content-MD5 optional per part (same page); checksums and conditionals unverified.
	{Name: "obs", MinPartSize: 100 * bytesize.KiB, MaxPartSize: 5 * gb, MaxParts: 10000,
		MaxObjectSize: 48800 * gb, MaxSinglePut: 5 * gb, ContentMD5: true},

	// Alibaba OSS. 100 KB..5 GB parts (checked at Complete): https://www.alibabacloud.com/help/doc-detail/31993.html
	// Ascending part numbers, gaps allowed: https://help.aliyun.com/en/oss/developer-reference/completemultipartupload
	// 5 GB PUT, 48.8 TB object: https://www.alibabacloud.com/help/doc-detail/32030.htm
	// Native CRC64-ECMA only; no-overwrite is x-oss-forbid-overwrite:
	// https://help.aliyun.com/en/oss/user-guide/0042-00000214
	{Name: "oss", MinPartSize: 100 * bytesize.KiB, MaxPartSize: 5 * gb, MaxParts: 10000,
		MaxObjectSize: 48800 * gb, MaxSinglePut: 5 * gb, ContentMD5: true},

	// Cloudflare R2. Equal non-final parts, last part no larger, 5 MiB min, 10,000 parts:
	// https://developers.cloudflare.com/r2/objects/multipart-objects (also: multipart ETag is
	// md5-of-md5s-N for uploads since June 2023). Per request (part or PUT) 5 GiB - 5 MiB, object
	// 5 TiB - 5 GiB: https://developers.cloudflare.com/r2/reference/limits
	// Checksums (CRC64NVME full only, the rest composite only): https://developers.cloudflare.com/r2/api/s3/api/
	// If-None-Match on PutObject: https://github.com/cloudflare/cloudflare-docs/pull/5303 ; on
	// Complete unverified. Content-MD5 listed for PutObject/CreateMultipartUpload, not UploadPart.
	{Name: "r2", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5*bytesize.GiB - 5*bytesize.MiB, MaxParts: 10000,
		MaxObjectSize: 5*bytesize.TiB - 5*bytesize.GiB, MaxSinglePut: 5*bytesize.GiB - 5*bytesize.MiB,
		EqualParts: true, LastPartNotLarger: true,
		Checksums:      ChecksumSupport{CRC32: Composite, CRC32C: Composite, CRC64NVME: FullObject, SHA1: Composite, SHA256: Composite},
		ConditionalPut: true, MultipartETagMD5: true},

	// SeaweedFS. 5 MiB min checked at Complete (weed/s3api/filer_multipart.go), 10,000 parts
	// (MaxS3MultipartParts); the 5 GiB S3MaxPartSize constant is not enforced, PUT and object
	// limits unverified: AWS values. Checksums, composite for multipart (weed/s3api/chunked_reader_v4.go);
	// CRC64NVME left out because AWS only defines it as FULL_OBJECT. If-None-Match on PUT and
	// Complete (s3api_object_handlers_put.go, s3api_object_handlers_multipart.go).
	{Name: "seaweedfs", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * bytesize.GiB, MaxParts: 10000,
		MaxObjectSize: 10000 * 5 * bytesize.GiB, MaxSinglePut: 5 * gb,
		Checksums:  ChecksumSupport{CRC32: Composite, CRC32C: Composite, SHA1: Composite, SHA256: Composite},
		ContentMD5: true, ConditionalPut: true, ConditionalComplete: true},

	// Versity S3 Gateway. 5 MiB min (backend/common.go), 5 GiB per request body
	// (s3api/middlewares/authentication.go), 10,000 parts by default (--mp-max-parts may lower it:
	// use a custom parts= then). Object size backend-dependent: 10,000 x 5 GiB. It rejects invalid
	// algorithm x type pairs as AWS does (s3err/s3err.go). If-None-Match: * on PUT and Complete:
	// https://github.com/versity/versitygw/pull/1727. Measured on v1.8.0 (safeput probe, README.md's
	// compatibility table): MD5 and MD5-of-MD5s-N ETags; HEAD reports the stored checksums (it
	// computes a CRC64NVME for every object). CRC32C is preferred: the gateway spends more CPU
	// when sent a CRC64NVME than a CRC32C or CRC32 (compared as for minio above, through
	// `safeput put --provider versitygw --checksum X`).
	{Name: "versitygw", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * bytesize.GiB, MaxParts: 10000,
		MaxObjectSize: 10000 * 5 * bytesize.GiB, MaxSinglePut: 5 * bytesize.GiB,
		Checksums: awsChecksums, ContentMD5: true, ConditionalPut: true, ConditionalComplete: true,
		SinglePutETagMD5: true, MultipartETagMD5: true, HeadChecksums: true,
		PreferredChecksum: store.ChecksumCRC32C},

	// Wasabi. Multipart "adheres to" AWS: https://knowledgebase.wasabi.com/hc/en-us/articles/360030872392
	// 5 GB PUT, 5 TB object (Wasabi FAQ, quoted in https://github.com/pglombardo/PasswordPusher/issues/1895).
	// BadDigest/InvalidDigest for Content-MD5: https://docs.wasabi.com/docs/rest-api-introduction
	// Checksums and conditionals unverified.
	{Name: "wasabi", MinPartSize: 5 * bytesize.MiB, MaxPartSize: 5 * bytesize.GiB, MaxParts: 10000,
		MaxObjectSize: 5 * tb, MaxSinglePut: 5 * gb, ContentMD5: true},
}

// strict is every profile intersected, so an unknown S3-compatible store is served by what all
// known ones accept: 5 MiB..5 GB parts, 10,000 parts, equal non-final parts, last part 1 B..P,
// contiguous numbers, 5 TB objects, no checksum header relied on, no conditional write relied on
// (a create-only write still sends If-None-Match, and checks the key with a HEAD as well).
//
// Its writes offer a FULL_OBJECT CRC32C (a refusal is retried without it). CRC32C because the
// test servers spend less CPU checking it than a CRC64NVME (the minio and versitygw profiles
// above), and AWS takes it as FULL_OBJECT. R2 takes CRC32C only as COMPOSITE: a write at
// defaults sends an R2 endpoint a CRC64NVME instead (its HostSuffix; ForEndpoint).
var strict = withPreference(intersect(DefaultProfile, profiles...), store.ChecksumCRC32C)

func withPreference(r Rules, a store.ChecksumAlgorithm) Rules {
	r.PreferredChecksum = a
	return r
}

// Profile returns the named profile ("aws", "r2", ..., "strict"); names are case-insensitive.
// An unknown name is an error listing the valid ones.
func Profile(name string) (Rules, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == DefaultProfile {
		return strict, nil
	}
	for _, r := range profiles {
		if r.Name == n {
			return r, nil
		}
	}
	return Rules{}, invalidf("unknown profile %q (valid: %s)", name, strings.Join(ProfileNames(), ", "))
}

// endpointHosts is the profile table's other half: the providers whose endpoints are known by
// their host, so that a write at the default profile can make the one choice strict cannot make
// for every store: which checksum the provider takes whole. Cloudflare R2's endpoints are
// <account>.r2.cloudflarestorage.com (also <account>.<jurisdiction>.r2...):
// https://developers.cloudflare.com/r2/api/s3/api/
var endpointHosts = []struct{ suffix, profile string }{
	{".r2.cloudflarestorage.com", "r2"},
}

// ForEndpoint returns the profile of the provider an endpoint URL's host names, if it is one
// known by its host (R2).
func ForEndpoint(endpoint string) (Rules, bool) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return Rules{}, false
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range endpointHosts {
		if strings.HasSuffix(host, h.suffix) {
			r, err := Profile(h.profile)
			return r, err == nil
		}
	}
	return Rules{}, false
}

// ProfileNames lists every profile name, sorted, strict included.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles)+1)
	for _, r := range profiles {
		names = append(names, r.Name)
	}
	names = append(names, DefaultProfile)
	slices.Sort(names)
	return names
}
