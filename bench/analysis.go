package bench

import (
	"bufio"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/safeput/safeput/bytesize"
)

// The analysis and the README summary are computed from the report's own tables (parsed back
// from the Markdown), so every figure in the prose is one the tables show, rounded as they show
// it, and a test can regenerate the prose from a committed BENCHMARKS.md and compare.

// AnalysisHeading starts the generated analysis section of BENCHMARKS.md.
const AnalysisHeading = "## What bounds safeput here (analysis of the latest run)"

// TableRow is one row of a report table, as printed.
type TableRow struct {
	Server    string // empty in a report of one unnamed server
	Impl      string
	Role      Role
	Defaults  bool // safeput at its defaults: left out of the per-profile analysis
	Size      int64
	Kind      string
	MiBps     float64
	MinMiBps  float64 // the slowest run's MiB/s
	MaxMiBps  float64 // the fastest run's MiB/s
	CPU       float64 // client CPU s/GiB
	ServerCPU float64 // server CPU s/GiB; 0 when not measured
	PeakMiB   float64
	IdleMiB   float64
	VsRawPct  float64 // 0 when not measured
	VsPeer    float64 // 0 when not measured
	Note      string  // the row's note cell ("64 parts of 16 MiB, verified crc32c; …")
}

// Report is what ParseReport reads back from a report: the settings, the machine's cores (0
// when the report does not say) and the table rows.
type Report struct {
	Params Params
	Cores  int
	Rows   []TableRow
	// Command and Date are the run's, from its "- Command:" and "- Date:" lines.
	Command, Date string
}

var (
	settingsLine = regexp.MustCompile("^- Settings: part size ([^,]+), concurrency (\\d+), .*peer payload signing `([^`]*)`")
	groupLine    = regexp.MustCompile(`^### (?:([A-Za-z0-9_.-]+): )?(.+), (\w+) source$`)
	machineLine  = regexp.MustCompile(`^- Machine: .*?, (\d+) cores,`)
)

// ParseReport reads the settings and the per-size tables of a report written by Markdown.
func ParseReport(md string) (Report, error) {
	var r Report
	var size int64
	var kind, server string
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := settingsLine.FindStringSubmatch(line); m != nil {
			ps, err := bytesize.Parse(m[1])
			if err != nil {
				return r, fmt.Errorf("settings line %q: %w", line, err)
			}
			r.Params.PartSize = ps
			r.Params.Concurrency, _ = strconv.Atoi(m[2])
			r.Params.Signing = Signing(m[3])
			continue
		}
		if m := machineLine.FindStringSubmatch(line); m != nil {
			r.Cores, _ = strconv.Atoi(m[1])
			continue
		}
		if c, ok := strings.CutPrefix(line, "- Command: `"); ok && r.Command == "" {
			r.Command = strings.TrimSuffix(c, "`")
			continue
		}
		if d, ok := strings.CutPrefix(line, "- Date: "); ok && r.Date == "" {
			r.Date = d
			continue
		}
		if m := groupLine.FindStringSubmatch(line); m != nil {
			s, err := bytesize.Parse(m[2])
			if err != nil {
				return r, fmt.Errorf("table heading %q: %w", line, err)
			}
			server, size, kind = m[1], s, m[3]
			continue
		}
		if strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "## ") {
			size, kind = 0, ""
			continue
		}
		if size == 0 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| implementation") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 10 {
			return r, fmt.Errorf("table row %q: %d cells, want 10", line, len(cells))
		}
		im, err := ImplByName(cells[0])
		if err != nil {
			return r, err
		}
		row := TableRow{Server: server, Impl: im.Name, Role: im.Role, Defaults: im.Defaults, Size: size, Kind: kind, Note: cells[9]}
		for _, f := range []struct {
			cell   string
			dst    *float64
			suffix string
		}{
			{cells[1], &row.MiBps, ""}, {cells[3], &row.CPU, ""}, {cells[4], &row.ServerCPU, ""},
			{cells[5], &row.PeakMiB, ""}, {cells[6], &row.IdleMiB, ""}, {cells[7], &row.VsPeer, "×"}, {cells[8], &row.VsRawPct, " %"},
		} {
			if f.cell == "–" {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSuffix(f.cell, f.suffix), 64)
			if err != nil {
				return r, fmt.Errorf("table row %q: cell %q: %w", line, f.cell, err)
			}
			*f.dst = v
		}
		if lo, hi, ok := strings.Cut(cells[2], "–"); ok {
			row.MinMiBps, _ = strconv.ParseFloat(lo, 64)
			row.MaxMiBps, _ = strconv.ParseFloat(hi, 64)
		}
		r.Rows = append(r.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	if r.Params.Concurrency == 0 || len(r.Rows) == 0 {
		return r, fmt.Errorf("no settings line or no table rows")
	}
	return r, nil
}

// awsSDKPeers are the peers built on aws-sdk-go-v2, compared as a group for CPU.
var awsSDKPeers = []string{"transfermanager", "manager"}

// values collects f over the rows that keep says to.
func (r Report) values(keep func(TableRow) bool, f func(TableRow) float64) []float64 {
	var v []float64
	for _, row := range r.Rows {
		if keep(row) {
			v = append(v, f(row))
		}
	}
	return v
}

// span prints the range of v with format, as "a–b", or "a" when they print alike; "" when empty.
func span(v []float64, format string) string {
	if len(v) == 0 {
		return ""
	}
	lo, hi := fmt.Sprintf(format, slices.Min(v)), fmt.Sprintf(format, slices.Max(v))
	if lo == hi {
		return lo
	}
	return lo + "–" + hi
}

func isSafeput(row TableRow) bool { return row.Role == RoleSafeput && !row.Defaults }

// Servers lists the report's servers in table order ("" for a report of one unnamed server).
func (r Report) Servers() []string {
	var out []string
	for _, row := range r.Rows {
		if !slices.Contains(out, row.Server) {
			out = append(out, row.Server)
		}
	}
	return out
}

// On is the report restricted to one server's rows.
func (r Report) On(server string) Report {
	out := Report{Params: r.Params, Cores: r.Cores}
	for _, row := range r.Rows {
		if row.Server == server {
			out.Rows = append(out.Rows, row)
		}
	}
	return out
}

// serverBound: in every table the server spends more CPU per GiB on a multipart upload than
// any client does, so on this shared machine it, not the client, sets the pace.
func (r Report) serverBound() bool {
	srv := r.values(func(row TableRow) bool { return row.Role != RoleCeiling && row.ServerCPU > 0 }, func(row TableRow) float64 { return row.ServerCPU })
	cli := r.values(func(TableRow) bool { return true }, func(row TableRow) float64 { return row.CPU })
	return len(srv) > 0 && len(cli) > 0 && slices.Min(srv) > slices.Max(cli)
}

// cpuBound is the bullet that compares each multipart uploader's rate with what the machine's
// cores allow for the CPU that uploader and the server spend together per GiB: when both share
// the cores, an uploader cannot go faster than cores / (client + server CPU per GiB), so the
// rates rank as those sums do, and work one uploader makes the server do (checking a checksum,
// answering a verification) costs it throughput that the client's side cannot win back.
func (r Report) cpuBound() string {
	if r.Cores <= 0 {
		return ""
	}
	var parts []string
	var shares []float64
	for _, im := range Impls() {
		if im.Role == RoleCeiling {
			continue
		}
		mine := func(row TableRow) bool { return row.Impl == im.Name && row.ServerCPU > 0 && row.CPU > 0 }
		total := r.values(mine, func(row TableRow) float64 { return row.CPU + row.ServerCPU })
		if len(total) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", im.Name, span(total, "%.2f")))
		shares = append(shares, r.values(mine, func(row TableRow) float64 {
			return 100 * row.MiBps / (float64(r.Cores) * 1024 / (row.CPU + row.ServerCPU))
		})...)
	}
	if len(parts) == 0 {
		return ""
	}
	agree, pairs := r.rankedBySum()
	return fmt.Sprintf("- **CPU, both sides.** Client plus server CPU per GiB, in s: %s. On %d shared cores an uploader cannot go faster than %d divided by that sum, in GiB/s (the cores' CPU seconds per second over what each GiB costs); the multipart uploaders ran at %s %% of that bound, and in %d of %d pairs of them in one table the one with the lower sum was the faster. The sum, not the client's column alone, is what an upload costs this machine: the server's share includes what the uploader asks of it (a checksum to check on every part, a verification's ListParts and HEAD; see the integrity table), work that a server with cores of its own would do without slowing the client.\n",
		strings.Join(parts, ", "), r.Cores, r.Cores, span(shares, "%.0f"), agree, pairs)
}

// rankedBySum counts, over every pair of multipart rows in one table, those where the row with
// the lower client+server CPU per GiB had the higher MiB/s (agree), out of pairs whose sums differ.
func (r Report) rankedBySum() (agree, pairs int) {
	sum := func(row TableRow) float64 { return row.CPU + row.ServerCPU }
	for i, a := range r.Rows {
		for _, b := range r.Rows[i+1:] {
			if a.Role == RoleCeiling || b.Role == RoleCeiling || a.ServerCPU <= 0 || b.ServerCPU <= 0 ||
				a.Server != b.Server || a.Size != b.Size || a.Kind != b.Kind || sum(a) == sum(b) {
				continue
			}
			pairs++
			if (sum(a) < sum(b)) == (a.MiBps > b.MiBps) {
				agree++
			}
		}
	}
	return agree, pairs
}

// peer returns the row of impl at row's server, size and kind.
func (r Report) peer(impl string, row TableRow) (TableRow, bool) {
	for _, p := range r.Rows {
		if p.Impl == impl && p.Server == row.Server && p.Size == row.Size && p.Kind == row.Kind {
			return p, true
		}
	}
	return TableRow{}, false
}

// peersBehind lists the peers slower than every safeput row in every table they share.
func (r Report) peersBehind() []string {
	var out []string
	for _, im := range Impls() {
		if im.Role != RolePeer {
			continue
		}
		behind, seen := true, false
		for _, row := range r.Rows {
			if !isSafeput(row) {
				continue
			}
			if p, ok := r.peer(im.Name, row); ok {
				seen = true
				behind = behind && p.MiBps < row.MiBps
			}
		}
		if seen && behind {
			out = append(out, im.Name)
		}
	}
	return out
}

// lowestCPUPeer is the peer with the lowest median client CPU over all tables.
func (r Report) lowestCPUPeer() string {
	best, bestCPU := "", 0.0
	for _, im := range Impls() {
		if im.Role != RolePeer {
			continue
		}
		v := r.values(func(row TableRow) bool { return row.Impl == im.Name }, func(row TableRow) float64 { return row.CPU })
		if len(v) > 0 && (best == "" || median(v) < bestCPU) {
			best, bestCPU = im.Name, median(v)
		}
	}
	return best
}

// cpuSavingVsAWS is 1 − safeput's CPU over each AWS SDK peer's, in %, for every pair in a table.
func (r Report) cpuSavingVsAWS() []float64 {
	var v []float64
	for _, row := range r.Rows {
		if !isSafeput(row) {
			continue
		}
		for _, name := range awsSDKPeers {
			if p, ok := r.peer(name, row); ok && p.CPU > 0 {
				v = append(v, 100*(1-row.CPU/p.CPU))
			}
		}
	}
	return v
}

func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Analysis is the generated "what bounds safeput" section: its figures are the report's, per
// server.
func Analysis(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", AnalysisHeading)
	b.WriteString("Generated from the tables above; every figure is a range over one server's tables.\n\n")
	for _, srv := range r.Servers() {
		if srv != "" {
			fmt.Fprintf(&b, "### On %s\n\n", srv)
		}
		b.WriteString(analysisOf(r.On(srv)))
	}
	return b.String()
}

// analysisOf is the analysis bullets for one server's rows.
func analysisOf(r Report) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	multipartRow := func(row TableRow) bool { return row.Role != RoleCeiling && row.ServerCPU > 0 }
	ceiling := func(row TableRow) bool { return row.Role == RoleCeiling && row.ServerCPU > 0 }
	all := func(TableRow) bool { return true }
	cpu := func(row TableRow) float64 { return row.CPU }
	srvCPU := func(row TableRow) float64 { return row.ServerCPU }
	vsRaw := func(row TableRow) float64 { return row.VsRawPct }
	vsPeer := func(row TableRow) float64 { return row.VsPeer }
	peak := func(row TableRow) float64 { return row.PeakMiB }
	withRaw := func(row TableRow) bool { return isSafeput(row) && row.VsRawPct > 0 }
	withPeer := func(row TableRow) bool { return isSafeput(row) && row.VsPeer > 0 }

	w("- **Throughput.** Client and server share the machine's cores.")
	if s := span(r.values(multipartRow, srvCPU), "%.2f"); s != "" {
		w(" The server spends %s s of CPU per GiB on a multipart upload", s)
		if c := span(r.values(ceiling, srvCPU), "%.2f"); c != "" {
			w(" against %s s for the raw single PUT", c)
		}
		w(", while the clients spend %s s.", span(r.values(all, cpu), "%.2f"))
	}
	if s := span(r.values(withRaw, vsRaw), "%.0f"); s != "" {
		w(" safeput runs at %s %% of the raw PUT", s)
		if p := span(r.values(withPeer, vsPeer), "%.2f"); p != "" {
			w(" and at %s× the best peer", p)
		}
		if behind := r.peersBehind(); len(behind) > 0 {
			w(", ahead of %s in every table", joinAnd(behind))
		}
		w(".")
	}
	if v := r.values(withPeer, vsPeer); len(v) > 0 && slices.Max(v) < TargetPeerRatio {
		w(" The %.1f×-the-best-peer target is met in no table", TargetPeerRatio)
		if r.serverBound() {
			w(": with the server using most of the CPU, client work alone cannot reach it here; a separate or larger server is needed to show client-side differences in MiB/s")
		}
		w(".")
	}
	w("\n")
	b.WriteString(r.cpuBound())

	if low := r.lowestCPUPeer(); low != "" {
		w("- **Client CPU: verification.**")
		var perKind []string
		for _, k := range []struct{ kind, label string }{{SourceStream, "a stream"}, {SourceReaderAt, "an io.ReaderAt source"}} {
			mine := r.values(func(row TableRow) bool { return isSafeput(row) && row.Kind == k.kind }, cpu)
			theirs := r.values(func(row TableRow) bool { return row.Impl == low && row.Kind == k.kind }, cpu)
			if len(mine) > 0 && len(theirs) > 0 {
				perKind = append(perKind, fmt.Sprintf("on %s safeput spends %s s/GiB against %s's %s", k.label, span(mine, "%.2f"), low, span(theirs, "%.2f")))
			}
		}
		if len(perKind) > 0 {
			first := perKind[0]
			w(" %s%s", strings.ToUpper(first[:1]), first[1:])
			for _, p := range perKind[1:] {
				w("; %s", p)
			}
			w(" (see the integrity table for what each sends and checks).")
		}
		w(" What verification costs: the CRC pass (the profile's CRC; on a stream it is taken as the bytes arrive, while they are still in the CPU's cache) and, for an io.ReaderAt source, a second read of each part (the checksum header must precede the body, and copying parts into buffers would cost the part-buffer memory that path avoids). A file's second read is the kernel's (sendfile), which also spares the copy into the socket that the other uploaders make.")
		if s := span(r.cpuSavingVsAWS(), "%.0f"); s != "" {
			w(" Against the AWS SDK uploaders (%s) safeput uses %s %% less CPU per GiB.", joinAnd(awsSDKPeers), s)
		}
		w("\n")
	}

	b.WriteString(r.defaultsBullet())
	b.WriteString(r.equalIntegrityBullet())

	limit := float64(int64(r.Params.Concurrency)*r.Params.PartSize+TargetMemSlack) / (1 << 20)
	readerAt := func(row TableRow) bool { return isSafeput(row) && row.Kind == SourceReaderAt }
	streamed := func(row TableRow) bool { return isSafeput(row) && row.Kind == SourceStream }
	w("- **Memory.**")
	if s := span(r.values(readerAt, peak), "%.1f"); s != "" {
		w(" With an io.ReaderAt source safeput holds no part buffers (%s MiB peak RSS).", s)
	}
	if s := span(r.values(streamed, peak), "%.1f"); s != "" {
		w(" With a stream it holds at most concurrency × part size of buffers (%d × %s; TestStreamMemoryBound in writer/ asserts that bound on allocated bytes); RSS adds the idle process (%s MiB) and the per-request garbage the GC does not collect while the live buffers set its goal, which takes a stream to %s MiB peak RSS",
			r.Params.Concurrency, bytesize.Format(r.Params.PartSize), span(r.values(all, func(row TableRow) float64 { return row.IdleMiB }), "%.1f"), s)
		over := r.values(func(row TableRow) bool { return streamed(row) && row.PeakMiB > limit }, peak)
		if len(over) == 0 {
			w(", within the %.0f MiB target.", limit)
		} else {
			w(", over the %.0f MiB target by up to %.1f MiB in %d of %d stream rows.", limit, slices.Max(over)-limit, len(over), len(r.values(streamed, peak)))
		}
		var peers []string
		for _, im := range Impls() {
			if im.Role != RolePeer {
				continue
			}
			if s := span(r.values(func(row TableRow) bool { return row.Impl == im.Name && row.Kind == SourceStream }, peak), "%.1f"); s != "" {
				peers = append(peers, im.Name+" "+s)
			}
		}
		if len(peers) > 0 {
			w(" Peers on a stream, in MiB: %s.", strings.Join(peers, ", "))
		}
	}
	w("\n\n")
	return b.String()
}

func isDefaults(row TableRow) bool { return row.Role == RoleSafeput && row.Defaults }

// lowestPeerCPU is, per size and source of row, the lowest client CPU per GiB of any peer (0
// when no peer was measured there).
func (r Report) lowestPeerCPU(row TableRow) float64 {
	low := 0.0
	for _, p := range r.Rows {
		if p.Role == RolePeer && p.Size == row.Size && p.Kind == row.Kind && (low == 0 || p.CPU < low) {
			low = p.CPU
		}
	}
	return low
}

// defaultsBullet is the analysis of the defaults tables: safeput as a user who names no profile
// runs it, against the targets (≥ 1.0× the best peer, client CPU below every peer's),
// and, where a target is missed, what the tables show bounds it.
func (r Report) defaultsBullet() string {
	var rows []TableRow
	for _, row := range r.Rows {
		if isDefaults(row) {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	var vsPeer, cpus, lows []float64
	speedMet, cpuMet, withPeer := 0, 0, 0
	for _, row := range rows {
		cpus = append(cpus, row.CPU)
		if row.VsPeer > 0 {
			withPeer++
			vsPeer = append(vsPeer, row.VsPeer)
			if row.VsPeer >= TargetDefaultsPeerRatio {
				speedMet++
			}
		}
		if low := r.lowestPeerCPU(row); low > 0 {
			lows = append(lows, low)
			if row.CPU < low {
				cpuMet++
			}
		}
	}
	w("- **At defaults** (no profile, no flags: %s).", joinAnd(implNames(rows)))
	if withPeer > 0 {
		w(" Throughput %s× the best peer, the ≥ %.1f× target met in %d of %d rows;", span(vsPeer, "%.2f"), TargetDefaultsPeerRatio, speedMet, withPeer)
	}
	w(" client CPU %s s/GiB", span(cpus, "%.2f"))
	if len(lows) > 0 {
		w(" against the lowest peer's %s, below every peer's in %d of %d rows", span(lows, "%.2f"), cpuMet, len(rows))
	}
	w(".")
	if speedMet == withPeer && cpuMet == len(rows) {
		w("\n")
		return b.String()
	}
	// What the tables show about the bound: the server's work at defaults against under the
	// server's own profile, and the CLI process against the library.
	srv := func(keep func(TableRow) bool) []float64 {
		return r.values(func(row TableRow) bool { return keep(row) && row.ServerCPU > 0 }, func(row TableRow) float64 { return row.ServerCPU })
	}
	lib := func(row TableRow) bool { return isDefaults(row) && row.Impl != "safeput-cli" }
	if d, p := srv(lib), srv(isSafeput); len(d) > 0 && len(p) > 0 && median(d) > median(p) {
		w(" The server spends %s s of CPU per GiB on an upload at defaults against %s under its own profile", span(d, "%.2f"), span(p, "%.2f"))
		if r.serverBound() {
			w(", and on this machine the server's CPU is the bound")
		}
		da, pa := r.verifiedChecksums(lib), r.verifiedChecksums(isSafeput)
		if da != "" && pa != "" && da != pa {
			w(": at defaults safeput's writes were verified by %s, under the profile by %s (see the integrity table), and the server's extra CPU per GiB comes out of the cores the upload shares with it.", da, pa)
		} else {
			w(".")
		}
	}
	w("%s", r.missedBound(rows, func(TableRow) bool { return true }, TargetDefaultsPeerRatio, "the best peer"))
	cli := r.values(func(row TableRow) bool { return row.Impl == "safeput-cli" }, func(row TableRow) float64 { return row.CPU })
	libCPU := r.values(lib, func(row TableRow) float64 { return row.CPU })
	if len(cli) > 0 && len(libCPU) > 0 && median(cli) > median(libCPU) {
		w(" The CLI's rows spend %s s/GiB against the library's %s at the same defaults", span(cli, "%.2f"), span(libCPU, "%.2f"))
		if own := r.values(func(row TableRow) bool { return row.Impl == "safeput-cli" && cliOwnCPU(row) > 0 }, cliOwnCPU); len(own) > 0 {
			w("; the CLI process's own user and system time (each row's last run, in its note) is %s", span(own, "%.2f"))
		}
		w(". A CLI row's column also counts the harness's memory sampler, as every row's does (the feed into a stream's pipe is left out: see the integrity table); the CLI's own time adds its start-up and, on a stream, reading that pipe.")
	}
	w("\n")
	return b.String()
}

// bestPeer is the fastest row in row's table of the peers keep accepts.
func (r Report) bestPeer(row TableRow, keep func(TableRow) bool) (TableRow, bool) {
	var best TableRow
	found := false
	for _, p := range r.Rows {
		if p.Role == RolePeer && keep(p) && p.Server == row.Server && p.Size == row.Size && p.Kind == row.Kind && (!found || p.MiBps > best.MiBps) {
			best, found = p, true
		}
	}
	return best, found
}

// missedBound sorts the rows below target× the best of the peers keep accepts by what their
// table shows: those whose client+server CPU per GiB exceeds that peer's (on shared cores the
// sum bounds the rate: cpuBound), those whose sum is no higher and whose runs' range overlaps
// the peer's (the run-to-run spread), and any that neither explains, named.
func (r Report) missedBound(rows []TableRow, keep func(TableRow) bool, target float64, peer string) string {
	// Sums as the tables print them, to the hundredth: a difference the tables do not show is none.
	sum := func(row TableRow) float64 { return math.Round((row.CPU+row.ServerCPU)*100) / 100 }
	var costlier, bests, overlap, other []TableRow
	var ran, bound []float64 // per costlier row: its ratio to that peer, and the sums' ratio
	for _, row := range rows {
		best, ok := r.bestPeer(row, keep)
		if !ok || row.ServerCPU <= 0 || best.ServerCPU <= 0 || vsBest(row, best) >= target {
			continue
		}
		switch {
		case sum(row) > sum(best):
			costlier = append(costlier, row)
			bests = append(bests, best)
			ran = append(ran, vsBest(row, best))
			bound = append(bound, sum(best)/sum(row))
		case row.MaxMiBps >= best.MinMiBps && row.MaxMiBps > 0:
			overlap = append(overlap, row)
		default:
			other = append(other, row)
		}
	}
	missed := len(costlier) + len(overlap) + len(other)
	if missed == 0 {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(" Of the %d rows below %.1f×, ", missed, target)
	if len(costlier) > 0 {
		of := func(rs []TableRow, f func(TableRow) float64) []float64 {
			v := make([]float64, len(rs))
			for i, x := range rs {
				v[i] = f(x)
			}
			return v
		}
		w("%d cost this machine more CPU per GiB, client plus server, than %s of their table (%s s against %s): run at the same share of the cores' bound as that peer, the sums would put them at %s× it, and they ran at %s×. In them safeput's client spent %s s/GiB against that peer's %s, the server %s against %s.",
			len(costlier), peer, span(of(costlier, sum), "%.2f"), span(of(bests, sum), "%.2f"), span(bound, "%.2f"), span(ran, "%.2f"),
			span(of(costlier, func(x TableRow) float64 { return x.CPU }), "%.2f"), span(of(bests, func(x TableRow) float64 { return x.CPU }), "%.2f"),
			span(of(costlier, func(x TableRow) float64 { return x.ServerCPU }), "%.2f"), span(of(bests, func(x TableRow) float64 { return x.ServerCPU }), "%.2f"))
		if len(overlap)+len(other) > 0 {
			w(" Of the rest, ")
		}
	}
	if len(overlap) > 0 {
		w("%d cost no more than %s, and each one's fastest run was at least as fast as that peer's slowest: a difference inside the run-to-run spread.", len(overlap), peer)
		if len(other) > 0 {
			w(" ")
		}
	}
	if len(other) > 0 {
		var names []string
		for _, row := range other {
			names = append(names, fmt.Sprintf("%s %s %s %s", row.Server, bytesize.Format(row.Size), row.Kind, row.Impl))
		}
		w("%d (%s) cost no more than %s and ran slower in every run: these tables do not explain them.", len(other), strings.Join(names, "; "), peer)
	}
	return b.String()
}

// vsBest is row's MiB/s over best's, to the hundredth as the tables print ratios.
func vsBest(row, best TableRow) float64 {
	if best.MiBps <= 0 {
		return 0
	}
	return math.Round(row.MiBps/best.MiBps*100) / 100
}

// checksummedPeer is a peer that sends a checksum with every part (see the integrity table), so
// its rows are at safeput's integrity.
func checksummedPeer(row TableRow) bool {
	im, err := ImplByName(row.Impl)
	return err == nil && im.Role == RolePeer && !im.NoChecksum
}

// equalIntegrityBullet compares every safeput row with the fastest peer of its table that
// sends a checksum with every part: the fair comparison, safeput ≥ 1.0× there.
func (r Report) equalIntegrityBullet() string {
	var rows []TableRow
	var vs []float64
	met := 0
	var names []string
	for _, row := range r.Rows {
		if row.Role != RoleSafeput {
			continue
		}
		best, ok := r.bestPeer(row, checksummedPeer)
		if !ok {
			continue
		}
		rows = append(rows, row)
		v := vsBest(row, best)
		vs = append(vs, v)
		if v >= TargetDefaultsPeerRatio {
			met++
		}
		if !slices.Contains(names, best.Impl) {
			names = append(names, best.Impl)
		}
	}
	if len(rows) == 0 {
		return ""
	}
	var peers, unchecked []string
	for _, im := range Impls() {
		switch {
		case im.Role != RolePeer:
		case im.NoChecksum:
			unchecked = append(unchecked, im.Name)
		default:
			peers = append(peers, im.Name)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- **At equal integrity** (each safeput row against the fastest peer of its table that sends a checksum with every part: %s; %s at its defaults sends none). safeput at %s× that peer (%s), ≥ %.1f× in %d of %d rows.",
		joinAnd(peers), joinAnd(unchecked), span(vs, "%.2f"), joinAnd(names), TargetDefaultsPeerRatio, met, len(rows))
	b.WriteString(r.missedBound(rows, checksummedPeer, TargetDefaultsPeerRatio, "the fastest checksummed peer"))
	b.WriteString("\n")
	return b.String()
}

// cliTimes is the CLI process's own CPU in a safeput-cli row's note.
var cliTimes = regexp.MustCompile(`CLI user ([0-9.]+) s, sys ([0-9.]+) s`)

// cliOwnCPU is the CLI process's own user + system time per GiB from row's note (0 when absent).
func cliOwnCPU(row TableRow) float64 {
	m := cliTimes.FindStringSubmatch(row.Note)
	if m == nil || row.Size <= 0 {
		return 0
	}
	u, errU := strconv.ParseFloat(m[1], 64)
	sy, errS := strconv.ParseFloat(m[2], 64)
	if errU != nil || errS != nil {
		return 0
	}
	return (u + sy) / (float64(row.Size) / (1 << 30))
}

// verifiedLine is the evidence a safeput row's note names ("…, verified crc32c; …").
var verifiedLine = regexp.MustCompile(`verified ([a-z0-9-]+)`)

// verifiedChecksums lists the evidence the notes of the rows keep name, in table order ("a, b").
func (r Report) verifiedChecksums(keep func(TableRow) bool) string {
	var out []string
	for _, row := range r.Rows {
		if m := verifiedLine.FindStringSubmatch(row.Note); keep(row) && m != nil && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return strings.Join(out, ", ")
}

func implNames(rows []TableRow) []string {
	var out []string
	for _, row := range rows {
		if !slices.Contains(out, row.Impl) {
			out = append(out, row.Impl)
		}
	}
	return out
}

// The markers of README.md's block of benchmark figures, which ReadmeBlock writes.
const (
	ReadmeBegin = "<!-- benchmark figures: generated by TestReadmeBenchmarkFigures in bench from BENCHMARKS.md; do not edit -->"
	ReadmeEnd   = "<!-- end of benchmark figures -->"
)

// ReadmeBlock is README.md's block of benchmark figures, markers included: ReadmeSummary, with
// the run's date and command beside it, wrapped at 100 columns.
func ReadmeBlock(r Report) string {
	text := fmt.Sprintf("From [BENCHMARKS.md](BENCHMARKS.md)'s latest run (%s; command: `%s`): %s",
		r.Date, r.Command, ReadmeSummary(r))
	return ReadmeBegin + "\n" + wrap(text, 100) + "\n" + ReadmeEnd
}

// wrap breaks text into lines of at most width columns at spaces (a longer word stands alone).
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		l := utf8.RuneCountInString(word)
		switch {
		case n == 0:
		case n+1+l > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += l
	}
	return b.String()
}

// ReadmeSummary is the benchmark sentences README.md carries, computed from BENCHMARKS.md: one
// per server.
func ReadmeSummary(r Report) string {
	var out []string
	for _, srv := range r.Servers() {
		out = append(out, readmeSummaryOf(srv, r.On(srv)))
	}
	return strings.Join(out, " ")
}

func readmeSummaryOf(server string, r Report) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	withRaw := func(row TableRow) bool { return isSafeput(row) && row.VsRawPct > 0 }
	withPeer := func(row TableRow) bool { return isSafeput(row) && row.VsPeer > 0 }
	where := "In the latest run"
	if server != "" {
		where = "On " + server
	}
	w("%s safeput with verification on ran at %s %% of the raw single PUT and %s× the best peer", where,
		span(r.values(withRaw, func(row TableRow) float64 { return row.VsRawPct }), "%.0f"),
		span(r.values(withPeer, func(row TableRow) float64 { return row.VsPeer }), "%.2f"))
	if behind := r.peersBehind(); len(behind) > 0 {
		w(", ahead of %s", joinAnd(behind))
	}
	if s := span(r.cpuSavingVsAWS(), "%.0f"); s != "" {
		w(", with %s %% less client CPU per GiB than the AWS SDK uploaders", s)
	}
	w(".")
	if d := r.values(func(row TableRow) bool { return isDefaults(row) && row.VsPeer > 0 }, func(row TableRow) float64 { return row.VsPeer }); len(d) > 0 {
		w(" At defaults (no profile, no flags; the library and the CLI) it ran at %s× the best peer", span(d, "%.2f"))
		if c := r.values(isDefaults, func(row TableRow) float64 { return row.CPU }); len(c) > 0 {
			w(", with %s s of client CPU per GiB", span(c, "%.2f"))
		}
		w(".")
	}
	srv := r.values(func(row TableRow) bool { return row.Role != RoleCeiling && row.ServerCPU > 0 }, func(row TableRow) float64 { return row.ServerCPU })
	if len(srv) > 0 {
		own := r.values(isSafeput, func(row TableRow) float64 { return row.CPU })
		if r.serverBound() {
			w(" The server is the bound: it spends %s s of CPU per GiB on a multipart upload against safeput's %s",
				span(srv, "%.2f"), span(own, "%.2f"))
			if v := r.values(withPeer, func(row TableRow) float64 { return row.VsPeer }); len(v) > 0 && slices.Max(v) < TargetPeerRatio {
				w(", so the %.1f×-the-best-peer target is out of reach here", TargetPeerRatio)
			}
		} else {
			w(" The server spends %s s of CPU per GiB on a multipart upload against safeput's %s", span(srv, "%.2f"), span(own, "%.2f"))
		}
		w(".")
	}
	return b.String()
}

// Normalize folds runs of white space into one space, so wrapped prose compares with generated.
func Normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// latestRunTables is doc's "Latest run" section up to its generated analysis: the tables and
// settings ParseReport reads. doc must have had its CLI memory and TLS blocks cut.
func latestRunTables(doc string) (string, bool) {
	i := strings.Index(doc, "## Latest run")
	if i < 0 {
		return "", false
	}
	body := doc[i:]
	if j := strings.Index(body, AnalysisHeading); j >= 0 {
		body = body[:j]
	}
	return body, true
}

// Reanalyse rewrites a report's generated prose from its own tables: the header before
// "## Latest run" becomes header, the integrity table is the current code's, and the analysis
// section is regenerated. It is how a committed BENCHMARKS.md is brought up to date when the
// raw records are gone (the harness keeps none: the tables are the run's record).
func Reanalyse(md, header string) (string, error) {
	md, wan := CutWAN(md) // its own run's figures: kept as they are
	md, flush := CutFlush(md)
	md, cliMem := CutCLIMem(md)
	md, tlsBlock := CutTLS(md)
	body, ok := latestRunTables(md)
	if !ok {
		return "", fmt.Errorf("no \"## Latest run\" section")
	}
	r, err := ParseReport(body)
	if err != nil {
		return "", err
	}
	body = withCurrentIntegrity(body, r)
	out := header + strings.TrimRight(body, "\n") + "\n\n" + Analysis(r)
	if tlsBlock != "" {
		// Its comparison with the plain run is regenerated from the tables just kept.
		blk, err := RefreshTLSBlock(tlsBlock, out)
		if err != nil {
			return "", err
		}
		out = SpliceTLS(out, blk)
	}
	if cliMem != "" {
		if tlsBlock != "" {
			out += "\n"
		}
		out += cliMem // after the analysis, which ends with a blank line
	}
	if wan != "" {
		out = SpliceWAN(out, wan)
	}
	if flush != "" {
		out = SpliceFlush(out, flush)
	}
	return out, nil
}

// withCurrentIntegrity is report with its integrity table regenerated for r's implementations: the
// table describes the implementations, not the measurement, so a reanalysis takes the current.
func withCurrentIntegrity(report string, r Report) string {
	a := strings.Index(report, "### Integrity settings")
	if a < 0 {
		return report
	}
	z := strings.Index(report[a:], "### Targets")
	if z < 0 {
		return report
	}
	var impls []string
	for _, row := range r.Rows {
		impls = append(impls, row.Impl)
	}
	return report[:a] + IntegrityTable(r.Params, impls) + report[a+z:]
}

// IntegrityTable is the report's "Integrity settings" section for the implementations named.
func IntegrityTable(p Params, impls []string) string {
	var b strings.Builder
	b.WriteString("### Integrity settings\n\n| implementation | what it sends and checks |\n|---|---|\n")
	for _, im := range Impls() {
		if slices.Contains(impls, im.Name) {
			fmt.Fprintf(&b, "| %s | %s |\n", im.Name, im.Integrity(p))
		}
	}
	b.WriteString("\n")
	return b.String()
}
