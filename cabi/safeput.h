/*
 * safeput.h: the C ABI of safeput. A write lands at the key verified, or fails with a
 * classified status; no multipart upload is left behind without the status saying so.
 *
 * Link either with the shared library (go build -buildmode=c-shared -o libsafeput.so ./lib in
 * the cabi module) or by importing github.com/safeput/safeput/cabi into a Go program whose C or
 * C++ code calls these functions in-process. The tested reference caller is
 * cabi/internal/ctest/abi_prog.c; cabi/README.md shows Rust and C++ wrappers.
 *
 * THREADS. Every function may be called from any thread. Different handles are independent.
 * Calls on one handle are serialised: a write and a close on the same handle from two threads
 * run one after the other (in an order you do not control, so give one handle to one writer
 * thread). safeput_abort may be called from any thread at any time, also while a write on the
 * same handle is blocked; it cancels that write.
 *
 * HANDLES. A handle is an opaque integer, never a pointer, and is never reused. Every handle
 * that safeput_open returned must be ended by exactly one safeput_close or safeput_abort; after
 * that it is invalid, and any call with it returns SAFEPUT_BAD_INPUT (never a crash). A handle
 * that is never ended keeps its memory (up to concurrency x part size) until the process ends.
 *
 * JSON OUT. Functions that take `char **json_out` set *json_out on every return: to NULL or to a
 * NUL-terminated UTF-8 JSON object allocated by the library, which the caller owns and must
 * release with safeput_free (not free(): the library may use another allocator). Pass NULL for
 * json_out when you do not want the text. On a failure the object is
 *   {"status":"failed","exit_code":N,"kind":"integrity","code":"BadDigest","http_status":400,
 *    "upload_id":"...","abort_failed":false,"object_left":false,"error":"one line"}
 * (kind, code, http_status, upload_id, abort_failed and object_left only when known; object_left:
 * an object of this write, not proven to be the bytes sent, is at the key). The status returned is
 * always equal to exit_code.
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
 * config_json (read only during the call) is one JSON object; unknown fields are rejected:
 *   "bucket", "key"            required
 *   "endpoint"                 http(s)://host[:port]; else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL
 *   "region"                   else AWS_REGION, AWS_DEFAULT_REGION, the profile's; us-east-1
 *   "path_style"               true: endpoint/bucket addressing
 *   "backend"                  "aws" (default, aws-sdk-go-v2) or "minio" (minio-go)
 *   "access_key","secret_key","session_token"
 *                              else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 *                              else the shared config files for "profile" (else AWS_PROFILE)
 *   "profile"                  shared config/credentials profile (no instance metadata lookup)
 *   "insecure_skip_verify"     skip TLS certificate checks (test endpoints only)
 *   "ca_bundle"                PEM file of a private CA, trusted besides the system roots;
 *                              else AWS_CA_BUNDLE, else the profile's ca_bundle
 *   "provider"                 provider profile ("strict" default, "aws", "minio", "r2", ...)
 *                              or a rules string "min=5MiB,max=5GiB,parts=10000"
 *   "part_size"                bytes, or a string "16MiB" (default 16 MiB)
 *   "concurrency"              parts in flight and part buffers held (default 4)
 *   "checksum"                 "crc64nvme", "crc32c", "crc32", "none" (default: the
 *                              provider's choice: "crc32c" for minio and versitygw, else
 *                              "crc64nvme")
 *   "create_only"              fail with SAFEPUT_PRECONDITION if the key exists
 *   "content_type"             the object's Content-Type
 *   "size"                     the exact size, when known (a different total fails)
 *   "expected_size"            largest size an unknown-size stream may reach (sizes the parts)
 *   "read_back"                after commit, re-read the whole object and compare
 *   "stall_timeout"            cut and retry a request that moves no byte for this long
 *                              ("20s" default, "0s" off, at most "1h")
 *   "log_level"                "debug", "info", "warn", "error": JSON lines on stderr; default none
 *   "test_faults"              tests only: honoured by a library built with the safeput_faults
 *                              tag, SAFEPUT_BAD_INPUT in every other build
 *
 * On SAFEPUT_OK, *handle_out is the new handle and *json_out is NULL. On any other status
 * (SAFEPUT_BAD_INPUT for every configuration problem), *handle_out is 0 and no handle exists.
 * NULL config_json or handle_out: SAFEPUT_BAD_INPUT.
 */
int safeput_open(const char *config_json, int64_t *handle_out, char **json_out);

/*
 * safeput_write hands len bytes at buf to the writer, which copies them (buf is not kept).
 * It blocks only while all part buffers are in flight (back-pressure) and returns SAFEPUT_OK
 * once every byte is accepted; a full part is sent in the background. A failure is sticky:
 * every later write and the close return it, and the handle must still be ended with
 * safeput_close or safeput_abort. len 0 is a no-op (buf may then be NULL).
 * Unknown or ended handle, NULL buf with len > 0: SAFEPUT_BAD_INPUT.
 * A write cancelled by safeput_abort from another thread returns SAFEPUT_CANCELED.
 */
int safeput_write(int64_t handle, const void *buf, size_t len, char **json_out);

/*
 * safeput_close commits the object and verifies what landed, then ends the handle (whatever
 * the status). SAFEPUT_OK only when the object is at the key and verified; *json_out is then
 *   {"status":"landed","bucket":..,"key":..,"size":..,"etag":..,"checksum_algorithm":..,
 *    "checksum":..,"multipart":true,"parts":5,"part_size":5242880,"bytes_sent":..,
 *    "requests":..,"failures":{"integrity":1},"verified":"checksum","verified_strong":true,
 *    "already_existed":false,"upload_attempts":1,"elapsed_ms":..}
 * plus, when a lost CreateMultipartUpload answer left an upload safeput could not abort,
 * "left_behind":[upload ids], or, when it could not even look for one, "maybe_left_behind":true
 * and a note: a sweep of the key finds it.
 * Otherwise the failure JSON; any multipart upload has been aborted (abort_failed and upload_id
 * say when even that failed). It blocks for as long as the write's own bounds allow (retry
 * policy, request timeouts); safeput_abort from another thread cancels it (SAFEPUT_CANCELED,
 * unless it had already landed). Unknown or ended handle (double close, close after abort):
 * SAFEPUT_BAD_INPUT.
 */
int safeput_close(int64_t handle, char **json_out);

/*
 * safeput_abort discards the write: in-flight parts stop, the multipart upload is aborted,
 * nothing is committed; the handle ends. SAFEPUT_OK with {"status":"aborted"} when nothing is
 * left behind; if the store's abort itself failed, that failure's status with upload_id.
 * Called while safeput_close runs on another thread, it cancels that close and returns
 * SAFEPUT_OK with {"status":"cancelling"}; the close reports the outcome and ends the handle.
 * Unknown or ended handle (double abort, abort after close): SAFEPUT_BAD_INPUT.
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
