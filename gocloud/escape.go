package safeblob

// The escaping below is gocloud.dev/internal/escape's HexEscape (Apache License 2.0, The Go Cloud
// Development Kit Authors), which s3blob applies to keys and metadata on writes and reverses on
// reads. It is internal to gocloud.dev, so it is copied: a write through safeput must store the
// same bytes s3blob would, or s3blob's reads and listings would show other keys.

import (
	"fmt"
	"net/url"
	"strconv"
)

// escapeKey is s3blob's escapeKey: ASCII 0-31 and the "/" of "../" become "__0x<hex>__".
func escapeKey(key string) string {
	return hexEscape(key, func(r []rune, i int) bool {
		c := r[i]
		switch {
		case c < 32:
			return true
		case i > 1 && c == '/' && r[i-1] == '.' && r[i-2] == '.':
			return true
		}
		return false
	})
}

// escapeMetadata is s3blob's escaping of user metadata: keys URL-escaped, then "@:=" hex-escaped;
// values URL-escaped.
func escapeMetadata(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		k = hexEscape(url.PathEscape(k), func(r []rune, i int) bool {
			c := r[i]
			return c == '@' || c == ':' || c == '='
		})
		out[k] = url.PathEscape(v)
	}
	return out
}

func hexEscape(s string, shouldEscape func(s []rune, i int) bool) string {
	runes := []rune(s)
	escapeAt := make([]bool, len(runes))
	var pending []int
	n := 0
	for i := range runes {
		// Text that already reads as an escape sequence is escaped too, so two keys never
		// escape to the same stored key.
		if shouldEscape(runes, i) || isEscapeSequence(runes, i) {
			escapeAt[i] = true
			pending = append(pending, i)
			n++
		}
	}
	// An escaped rune's leading "__" could complete a dangling "__0x<hex>" before it.
	for len(pending) > 0 {
		i := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if j, ok := danglingEscapePrefix(runes, i); ok && !escapeAt[j] {
			escapeAt[j] = true
			pending = append(pending, j)
			n++
		}
	}
	if n == 0 {
		return s
	}
	escaped := make([]rune, 0, len(runes)+13*n)
	for i, r := range runes {
		if escapeAt[i] {
			escaped = append(escaped, []rune(fmt.Sprintf("__%#x__", r))...)
		} else {
			escaped = append(escaped, r)
		}
	}
	return string(escaped)
}

func danglingEscapePrefix(r []rune, end int) (int, bool) {
	if end > 0 && r[end-1] == '_' {
		end--
	}
	start := end
	for start > 0 && r[start-1] != '_' {
		start--
	}
	if start < 2 || end-start < 2 || r[start] != '0' || r[start+1] != 'x' || r[start-2] != '_' {
		return 0, false
	}
	if _, err := strconv.ParseInt(string(r[start+2:end]), 16, 32); err != nil {
		return 0, false
	}
	return start - 2, true
}

// isEscapeSequence tells whether r[i:] starts with "__0x<hex>__".
func isEscapeSequence(r []rune, i int) bool {
	if i+4 > len(r) || r[i] != '_' || r[i+1] != '_' || r[i+2] != '0' || r[i+3] != 'x' {
		return false
	}
	j := i + 4
	for j < len(r) && r[j] != '_' {
		j++
	}
	if j+1 >= len(r) || r[j+1] != '_' {
		return false
	}
	_, err := strconv.ParseInt(string(r[i+4:j]), 16, 32)
	return err == nil
}
