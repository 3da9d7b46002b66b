// Package verify names how safeput checked a landed object against what was written:
// writer.Result.Verified and writer.Event.Method hold a Method. The checks themselves are
// internal to the writer.
package verify

// Method names how a landed object was checked against what was written.
type Method string

// The methods, strongest first. Only LengthOnly is weak: it cannot see a flipped byte.
const (
	MethodReadBack   Method = "read-back"
	MethodCRC64NVME  Method = "crc64nvme"
	MethodCRC32C     Method = "crc32c"
	MethodCRC32      Method = "crc32"
	MethodSHA256     Method = "sha256"
	MethodSHA1       Method = "sha1"
	MethodETagMD5    Method = "etag-md5"
	MethodLengthOnly Method = "length-only"
)

// Strong reports whether the method compares content, not just length.
func (m Method) Strong() bool { return m != MethodLengthOnly && m != "" }
