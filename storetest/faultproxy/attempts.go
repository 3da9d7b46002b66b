package faultproxy

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// StaleListed counts (in Stats.Injected) the entries ListEveryAttempt added to ListParts
// answers. It is a mode, not a rule's Kind: SetRules does not take it.
const StaleListed Kind = "StaleListed"

// attempt is one UploadPart the store answered 2xx, as ListParts would list it.
type attempt struct {
	etag      string
	size      int64
	checksums map[string]string // ListParts element name (ChecksumCRC64NVME) → value
	at        time.Time
}

type partKey struct {
	uploadID string
	part     int32
}

// SetListEveryAttempt switches the mode where ListParts lists every attempt of a re-sent part,
// as some stores do: each earlier UploadPart of a part number that the store answered 2xx
// (through this proxy, whatever became of the answer) is added to the answer, before the entry
// the store lists, with the size forwarded and the ETag and checksums the store answered. An
// attempt whose ETag the store lists is the one it keeps and is not added again.
func (p *Proxy) SetListEveryAttempt(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.everyAttempt = on
}

// recordAttempt notes an UploadPart the store answered 2xx (size: the body forwarded).
func (p *Proxy) recordAttempt(r *http.Request, size int64, resp *http.Response) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 || Classify(r) != UploadPart {
		return
	}
	t := parseTarget(r)
	a := attempt{etag: strings.Trim(strings.TrimSpace(resp.Header.Get("ETag")), `"`), size: size, checksums: map[string]string{}, at: time.Now().UTC()}
	for _, alg := range []string{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"} {
		if v := resp.Header.Get("x-amz-checksum-" + strings.ToLower(alg)); v != "" {
			a.checksums["Checksum"+alg] = v
		}
	}
	if a.etag == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.attempts == nil {
		p.attempts = map[partKey][]attempt{}
	}
	k := partKey{t.UploadID, t.PartNumber}
	p.attempts[k] = append(p.attempts[k], a)
}

var (
	partElement   = regexp.MustCompile(`(?s)<Part>.*?</Part>`)
	partNumberTag = regexp.MustCompile(`<PartNumber>\s*([0-9]+)\s*</PartNumber>`)
)

// listEveryAttempt forwards a ListParts and, on a 200, adds the stale attempts to the answer.
func (p *Proxy) listEveryAttempt(w http.ResponseWriter, r *http.Request) {
	resp, err := p.roundTrip(r, r.Body, r.ContentLength, forwardHeader(r.Header), false)
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		relay(w, resp)
		return
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	uploadID := parseTarget(r).UploadID
	added := 0
	body = partElement.ReplaceAllFunc(body, func(el []byte) []byte {
		m := partNumberTag.FindSubmatch(el)
		if m == nil {
			return el
		}
		n, err := strconv.ParseInt(string(m[1]), 10, 32)
		if err != nil {
			return el
		}
		var entry struct{ ETag string }
		if xml.Unmarshal(el, &entry) != nil {
			return el
		}
		listed := strings.Trim(strings.TrimSpace(entry.ETag), `"`)
		stale := p.staleAttempts(partKey{uploadID, int32(n)}, listed)
		if len(stale) == 0 {
			return el
		}
		var b strings.Builder
		for _, a := range stale {
			fmt.Fprintf(&b, `<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified><ETag>"%s"</ETag><Size>%d</Size>`,
				n, a.at.Format("2006-01-02T15:04:05.000Z"), a.etag, a.size)
			for name, v := range a.checksums {
				fmt.Fprintf(&b, "<%s>%s</%s>", name, v, name)
			}
			b.WriteString("</Part>")
		}
		added += len(stale)
		return append([]byte(b.String()), el...)
	})
	if added > 0 {
		p.mu.Lock()
		p.stats.Injected[StaleListed] += added
		p.mu.Unlock()
		p.logf("ListParts of upload %q: %d earlier attempts listed", uploadID, added)
	}
	for k, v := range forwardHeader(resp.Header) {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// staleAttempts returns the recorded attempts of k except the latest whose ETag is listed (the
// one the store keeps).
func (p *Proxy) staleAttempts(k partKey, listed string) []attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := p.attempts[k]
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].etag == listed {
			return append(append([]attempt(nil), all[:i]...), all[i+1:]...)
		}
	}
	return append([]attempt(nil), all...)
}
