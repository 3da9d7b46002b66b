package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// inPrefix is the scope rule of sweep, probe and recover: they act only on a key that starts
// with the prefix they were given. It is checked on every key a listing returns, because a store
// may ignore the prefix of ListMultipartUploads and list the whole bucket.
func inPrefix(key, prefix string) bool { return strings.HasPrefix(key, prefix) }

// printable is s as a human table shows it: unchanged when every rune is printable, else quoted
// with Go escapes (strconv.Quote), so a key holding a newline or a terminal control sequence
// cannot forge lines of the table. A string that starts with a quote is quoted too, so a quoted
// key is never mistaken for a plain one.
func printable(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, `"`) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}
