package faultproxy

import (
	"crypto/md5" //nolint:gosec // the fake store's ETags are MD5s, as S3's
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeParts is an upstream that keeps the last attempt of each part, as S3 does, and lists it.
func fakeParts(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	parts := map[string]string{} // part number → ETag
	sizes := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := r.URL.Query().Get("partNumber")
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPut {
			sum := md5.Sum(body) //nolint:gosec // see import
			parts[n], sizes[n] = hex.EncodeToString(sum[:]), len(body)
			w.Header().Set("ETag", `"`+parts[n]+`"`)
			w.Header().Set("x-amz-checksum-crc32", "c-"+n)
			return
		}
		var b strings.Builder
		b.WriteString(`<ListPartsResult><IsTruncated>false</IsTruncated>`)
		for _, k := range []string{"1", "2"} {
			if e, ok := parts[k]; ok {
				fmt.Fprintf(&b, `<Part><PartNumber>%s</PartNumber><ETag>&#34;%s&#34;</ETag><Size>%d</Size></Part>`, k, e, sizes[k])
			}
		}
		b.WriteString(`</ListPartsResult>`)
		_, _ = io.WriteString(w, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

type listed struct {
	Parts []struct {
		PartNumber    int
		ETag          string
		Size          int64
		ChecksumCRC32 string
	} `xml:"Part"`
}

// With ListEveryAttempt, a part sent twice is listed twice: the earlier attempt (its own size,
// ETag and checksum) before the one the store keeps; a part sent once, once.
func TestListEveryAttempt(t *testing.T) {
	p, err := Start(Config{Upstream: fakeParts(t).URL})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	do := func(method, query, body string) string {
		t.Helper()
		req, err := http.NewRequest(method, p.URL()+"/b/k?"+query, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, query, resp.StatusCode, b)
		}
		return string(b)
	}
	list := func() listed {
		t.Helper()
		var l listed
		if err := xml.Unmarshal([]byte(do(http.MethodGet, "uploadId=u", "")), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	do(http.MethodPut, "partNumber=1&uploadId=u", "first")
	do(http.MethodPut, "partNumber=2&uploadId=u", "two")
	do(http.MethodPut, "partNumber=1&uploadId=u", "second!")
	if l := list(); len(l.Parts) != 2 {
		t.Fatalf("mode off: %+v, want the store's own 2 entries", l.Parts)
	}
	p.SetListEveryAttempt(true)
	l := list()
	first, second := md5.Sum([]byte("first")), md5.Sum([]byte("second!")) //nolint:gosec // see import
	want := []string{
		fmt.Sprintf(`1 "%x" 5 c-1`, first), fmt.Sprintf(`1 "%x" 7 c-1`, second),
	}
	if len(l.Parts) != 3 || fmt.Sprintf(`%d %s %d %s`, l.Parts[0].PartNumber, l.Parts[0].ETag, l.Parts[0].Size, l.Parts[0].ChecksumCRC32) != want[0] ||
		fmt.Sprintf(`%d %s %d`, l.Parts[1].PartNumber, l.Parts[1].ETag, l.Parts[1].Size) != want[1][:len(want[1])-4] || l.Parts[2].PartNumber != 2 {
		t.Fatalf("listed %+v, want %v then part 2", l.Parts, want)
	}
	if n := p.Stats().Injected[StaleListed]; n != 1 {
		t.Fatalf("StaleListed %d, want 1", n)
	}
}
