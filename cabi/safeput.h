/*
 * safeput.h: the C ABI of safeput. A write lands at the key verified, or fails with a
 * classified status; no multipart upload is left behind without the status saying so.
 *
 * Link either with the shared library (go build -buildmode=c-shared -o libsafeput.so ./lib in
 * the cabi module) or by importing github.com/safeput/safeput/cabi into a Go program whose C or
 * C++ code calls these functions in-process. The tested reference callers are
 * cabi/internal/ctest/abi_prog.c (C) and cabi/internal/rustcaller (Rust: bindings written from
 * this header and a safe wrapper to copy); cabi/README.md also sketches a C++ wrapper.
 *
 * THREADS. Every function may be called from any thread. Different handles are independent.
 * Calls on one handle are serialised: a write and a close on the same handle from two threads
 * run one after the other (in an order you do not control, so give one handle to one writer
 * thread). safeput_abort may be called from any thread at any time, also while a write on the
 * same handle is blocked; it cancels that write.
 *
 * HANDLES. A handle is an opaque integer, never a pointer, and is never reused. Every handle
 * that safeput_open returned must be ended by exactly one safeput_close or safeput_abort. After
 * safeput_close it is invalid: any call with it returns SAFEPUT_BAD_INPUT (never a crash). After
 * safeput_abort (also an abort that cancelled a close running on another thread) any call with
 * it returns SAFEPUT_CANCELED, so a thread still writing learns it was cancelled, not that it
 * misused the handle; the library remembers the 4096 most recently aborted handles (a few
 * bytes each), and one older than that answers SAFEPUT_BAD_INPUT like an unknown handle. A
 * handle that is never ended keeps its memory (up to concurrency x part size) until the
 * process ends.
 *
 * JSON OUT. Functions that take `char **json_out` set *json_out on every return: to NULL or to a
 * NUL-terminated UTF-8 JSON object allocated by the library, which the caller owns and must
 * release with safeput_free (not free(): the library may use another allocator). Pass NULL for
 * json_out when you do not want the text. On a failure the object is
 *   {"status":"failed","exit_code":5,"kind":"integrity","code":"BadDigest","http_status":400,
 *    "upload_id":"...","abort_failed":false,"object_left":false,"error":"one line"}
 * status, exit_code, kind and error always; code, http_status, upload_id, abort_failed and
 * object_left only when known (object_left: an object of this write, not proven to be the bytes
 * sent, is at the key). The status returned is always equal to exit_code. kind is one of
 * "transient", "throttled", "integrity", "compatibility", "precondition", "permanent",
 * "canceled", "internal"; bad input (status 2) is "permanent": retrying it cannot help.
 * (cabi/header_test.go checks these examples against the JSON real calls return.)
 *
 * INPUT. The library reads the strings and buffers passed in only during the call and keeps no
 * pointer to them; the caller may reuse or free them as soon as the call returns.
 */
#ifndef SAFEPUT_H
#define SAFEPUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: the safeput CLI's exit codes, so C, C++ and Rust map them as the shell does. */
#define SAFEPUT_OK            0 /* landed and verified (close); accepted (other calls) */
#define SAFEPUT_INTERNAL      1 /* a bug: a recovered panic or an impossible state; the JSON says where */
#define SAFEPUT_BAD_INPUT     2 /* bad config, NULL pointer, unknown/closed handle; nothing was sent */
#define SAFEPUT_TRANSIENT     3 /* transient or throttled failure that persisted after retries */
#define SAFEPUT_PERMANENT     4 /* credentials, permissions, missing bucket, ... */
#define SAFEPUT_INTEGRITY     5 /* what landed differs from what was written, after retries */
#define SAFEPUT_COMPATIBILITY 6 /* the store rejects the layout: change "provider" */
#define SAFEPUT_PRECONDITION  7 /* create_only and the key already exists */
#define SAFEPUT_CANCELED      8 /* aborted; any multipart upload was aborted */

/* The major version of the functions below; safeput_version() starts with it. */
#define SAFEPUT_ABI_VERSION_MAJOR 1

/*
 * safeput_open prepares a writer for one object; nothing is sent to the store yet.
 *
 * config_json (read only during the call) is one JSON object. It is read strictly, so it means
 * one thing: field names are exactly those below (lower case; "KEY" or "Bucket" is an unknown
 * field), each at most once (a repeated field is an error, not "the last one wins"), and every
 * string must be valid UTF-8 (a bad byte, or an escaped unpaired surrogate such as "\ud800", is
 * an error naming the field; it is never replaced). Unknown fields are rejected.
 *   "bucket", "key"            required
 *   "endpoint"                 http(s)://host[:port]; else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL
 *   "region"                   else AWS_REGION, AWS_DEFAULT_REGION, the profile's; us-east-1
 *   "path_style"               true: endpoint/bucket addressing
 *   "backend"                  "aws" (default, aws-sdk-go-v2) or "minio" (minio-go)
 *   "access_key","secret_key","session_token"
 *                              else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 *                              else the shared config files for "profile" (else AWS_PROFILE)
 *   "profile"                  shared config/credentials profile (no instance metadata lookup)
 *   "insecure_skip_verify"     skip TLS certificate checks (test endpoints only; the close
 *                              JSON's "warnings" says so)
 *   "ca_bundle"                PEM file of a private CA, trusted besides the system roots;
 *                              else AWS_CA_BUNDLE, else the profile's ca_bundle
 *                              (those two for an https endpoint only)
 *   "provider"                 provider profile ("strict" default, "aws", "minio", "r2", ...)
 *                              or a rules string "min=5MiB,max=5GiB,parts=10000"
 *   "part_size"                bytes, or a string "16MiB" (default 16 MiB)
 *   "concurrency"              parts in flight and part buffers held (default 4; 1 to 1024)
 *   "checksum"                 "crc64nvme", "crc32c", "crc32", "none" (default: the
 *                              provider's choice: "crc32c" for the default strict, minio
 *                              and versitygw, else "crc64nvme"; "crc64nvme" at strict on
 *                              an R2 endpoint, which takes CRC32C only as COMPOSITE)
 *   "create_only"              fail with SAFEPUT_PRECONDITION if the key exists
 *   "content_type"             the object's Content-Type
 *   "size"                     the exact size, when known (a different total fails)
 *   "expected_size"            largest size an unknown-size stream may reach (sizes the parts)
 *   "read_back"                after commit, re-read the whole object and compare
 *   "sse"                      server-side encryption: "AES256" (SSE-S3) or "aws:kms" (SSE-KMS);
 *                              after commit the HEAD must show it, else SAFEPUT_COMPATIBILITY
 *                              (code EncryptionNotApplied) and the object is deleted
 *   "sse_kms_key_id"           with "aws:kms": the KMS key (default: the store's)
 *   "sse_kms_encryption_context"  with "aws:kms": a JSON object of strings, as a string
 *   "bucket_key_enabled"       with "aws:kms": ask for an S3 Bucket Key
 *   "sse_c_key_file"           SSE-C: a file holding the 32-byte key (raw or base64); the key
 *                              is never logged or returned; the result's "sse_customer_key_md5"
 *                              is its MD5. The key travels in a request header: to a plain
 *                              http:// endpoint it is SAFEPUT_BAD_INPUT at open, unless
 *   "allow_sse_c_over_http"    true: send it there anyway, in the clear (the close JSON's
 *                              "warnings" says so)
 *   "stall_timeout"            cut and retry a request that moves no byte for this long
 *                              ("20s" default, "0s" off, at most "1h")
 *   "abort_timeout"            bound of each clean-up step after a failure or an abort: the
 *                              store's abort of the upload, and the sweep for an upload a lost
 *                              CreateMultipartUpload answer left ("60s" default, above "0s",
 *                              at most "1h"); see safeput_abort
 *   "log_level"                "debug", "info", "warn", "error": JSON lines on stderr; default none
 *   "test_faults"              tests only: honoured by a library built with the safeput_faults
 *                              tag, SAFEPUT_BAD_INPUT in every other build
 *
 * On SAFEPUT_OK, *handle_out is the new handle and *json_out is NULL. On any other status
 * (SAFEPUT_BAD_INPUT for every configuration problem), *handle_out is 0 and no handle exists.
 * What is wrong with the config itself is reported before what is missing from the
 * environment: missing credentials are reported only for a config that is otherwise right.
 * NULL config_json or handle_out: SAFEPUT_BAD_INPUT.
 *
 * VALGRIND. safeput_open finds the end of config_json with Go's vectorised byte search, which
 * reads whole aligned 16- or 32-byte words and so may read up to 31 bytes past the terminating
 * NUL, never across a page: harmless, but memcheck reports an invalid read in safeput_open when
 * the string ends near the end of a heap block (as Rust's CString does). safeput_open_len takes
 * the length and reads exactly those bytes: use it under memcheck, or suppress with
 *   {
 *      safeput-open-strlen-16
 *      Memcheck:Addr16
 *      fun:indexbytebody
 *      fun:runtime.findnull
 *   }
 *   {
 *      safeput-open-strlen-32
 *      Memcheck:Addr32
 *      fun:indexbytebody
 *      fun:runtime.findnull
 *   }
 * (cabi/sharedlib_test.go runs memcheck with exactly these lines.)
 */
int safeput_open(const char *config_json, int64_t *handle_out, char **json_out);

/*
 * safeput_open_len is safeput_open for config_len bytes at config_json, which need not be
 * NUL-terminated (a Rust &str, a C++ std::string_view). It reads exactly those bytes.
 * config_len above 1 MiB: SAFEPUT_BAD_INPUT. NULL config_json (with config_len > 0) or
 * handle_out: SAFEPUT_BAD_INPUT.
 */
int safeput_open_len(const char *config_json, size_t config_len, int64_t *handle_out, char **json_out);

/*
 * safeput_write hands len bytes at buf to the writer, which copies them (buf is not kept), and
 * returns SAFEPUT_OK once every byte is accepted; a full part is sent in the background. It
 * blocks in two cases, each bounded:
 *   - back-pressure: all `concurrency` part buffers are in flight; it waits for one to come
 *     back, which each part's own bounds (retries, stall_timeout) limit;
 *   - the write that carries the first byte past part_size (so the object needs a second part)
 *     creates the multipart upload and waits for CreateMultipartUpload, even with buffers
 *     free: no part can be sent before the store has named the upload, and the create's
 *     failure is this write's to report. The wait is the retry policy's: at most 3 attempts,
 *     each cut after stall_timeout with no answer, plus backoff under a second; about
 *     3 x stall_timeout, so about 60 s at the default 20 s against a store that accepts
 *     connections and never answers. Set stall_timeout lower to bound it tighter, or call
 *     safeput_abort from another thread, which ends the wait at once (the write returns 8).
 * A failure is sticky: every later write and the close return it, and the handle must still be
 * ended with safeput_close or safeput_abort. len 0 is a no-op (buf may then be NULL).
 * Unknown or closed handle, NULL buf with len > 0: SAFEPUT_BAD_INPUT. Aborted handle, or a
 * write cancelled by safeput_abort from another thread: SAFEPUT_CANCELED. Bytes beyond a
 * declared "size": SAFEPUT_PERMANENT, the error naming the declared size.
 */
int safeput_write(int64_t handle, const void *buf, size_t len, char **json_out);

/*
 * safeput_close commits the object and verifies what landed, then ends the handle (whatever
 * the status). SAFEPUT_OK only when the object is at the key and verified; *json_out is then,
 * for a multipart upload,
 *   {"status":"landed","bucket":"b","key":"k","size":11534336,"etag":"b9c8...-3",
 *    "checksum_algorithm":"CRC32C","checksum":"2YNAmA==","multipart":true,"parts":3,
 *    "part_size":5242880,"upload_id":"...","bytes_sent":11534336,"requests":7,
 *    "failures":{"integrity":1},"verified":"crc32c","verified_strong":true,
 *    "verified_by":"HeadObject","already_existed":false,"upload_attempts":1,"elapsed_ms":145}
 * and for a single PUT (an object within one part; parts and part_size are then 0)
 *   {"status":"landed","bucket":"b","key":"k","size":3,"etag":"4786...","checksum_algorithm":
 *    "CRC32C","checksum":"Zvlleg==","multipart":false,"parts":0,"part_size":0,"bytes_sent":3,
 *    "requests":1,"failures":{},"verified":"etag-md5","verified_strong":true,
 *    "verified_by":"PutObject","already_existed":false,"upload_attempts":1,"elapsed_ms":9}
 * verified names the evidence: the checksum whose value the store reported ("crc64nvme",
 * "crc32c", "crc32", "sha256", "sha1"), "etag-md5" (the ETag is the MD5 of the bytes),
 * "read-back" (the object was re-read), or "length-only" (verified_strong false);
 * verified_by names the request whose answer gave that evidence: "PutObject" or
 * "CompleteMultipartUpload" (the commit's own answer proved it; no HEAD was sent),
 * "HeadObject", or "GetObject" (a read-back);
 * failures counts the failed attempts by kind; already_existed: create_only found these
 * very bytes at the key. Also, when they apply: "version_id"; "commit_answer_lost":true when
 * an attempt of the commit may have landed unanswered (with already_existed, the object found
 * may be this write's own; without it, that object was there first); "notes" (facts about the store's
 * answers); "left_behind":[upload ids] when a lost CreateMultipartUpload answer left an upload
 * safeput could not abort, or, when it could not even look for one, "maybe_left_behind":true
 * and a note: a sweep of the key finds it; "encryption" ("AES256", "aws:kms", "SSE-C"),
 * "kms_key_id" and "sse_customer_key_md5": the server-side encryption the store's HEAD reported;
 * "warnings":[strings], in this JSON and in close's failure JSON, when the config weakened the
 * transport ("insecure_skip_verify", "allow_sse_c_over_http" to an http:// endpoint), whatever
 * "log_level" says.
 * Otherwise the failure JSON; any multipart upload has been aborted (abort_failed and upload_id
 * say when even that failed). It blocks for as long as the write's own bounds allow (retry
 * policy, stall_timeout per request, abort_timeout for the clean-up after a failure);
 * safeput_abort from another thread cancels it (SAFEPUT_CANCELED, unless it had already
 * landed). Unknown or closed handle (double close): SAFEPUT_BAD_INPUT; aborted handle:
 * SAFEPUT_CANCELED.
 */
int safeput_close(int64_t handle, char **json_out);

/*
 * safeput_abort discards the write: in-flight parts stop, the multipart upload is aborted,
 * nothing is committed; the handle ends. SAFEPUT_OK with
 *   {"status":"aborted"}
 * when nothing is left behind; if the store's abort itself failed, that failure's status with
 * upload_id and abort_failed. Called while safeput_close runs on another thread, it cancels that
 * close and returns SAFEPUT_OK at once with {"status":"cancelling"}; the close reports the
 * outcome and ends the handle.
 * WORST CASE. Otherwise it waits for the store: parts in flight are cancelled at once, then the
 * abort of the upload (repeated until the store no longer lists it) is bounded by abort_timeout,
 * and, only when a CreateMultipartUpload answer was lost, the sweep for the upload it may have
 * left is bounded by abort_timeout again: at most 2 x abort_timeout (120 s at the default 60 s)
 * plus a moment, against a store that accepts connections and never answers. When the bound
 * runs out the status is the failure with abort_failed true, and upload_id when the upload is
 * known (when only a lost create's upload may remain, the error says to sweep the key): what
 * may be left is reported, never left silently. A caller that cannot block that long
 * (a Rust Drop, an async cancellation) sets abort_timeout at open to what it can afford, or
 * calls safeput_abort from a thread of its own and reads the outcome there.
 * Unknown or closed handle (abort after close): SAFEPUT_BAD_INPUT; already aborted:
 * SAFEPUT_CANCELED.
 */
int safeput_abort(int64_t handle, char **json_out);

/* safeput_free releases a string the library returned through json_out. NULL is a no-op. */
void safeput_free(char *p);

/* safeput_version returns the ABI version, e.g. "1.0.0": a static string; do not free it. */
const char *safeput_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SAFEPUT_H */
