package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/safeput/safeput/bytesize"
)

// Row is one implementation's figures for one server, size and source kind.
type Row struct {
	Server    string // empty in a report of one unnamed server
	Impl      string
	Role      Role
	Defaults  bool // safeput at its defaults (Impl.Defaults): the defaults table
	Size      int64
	Kind      string
	Runs      int
	MiBps     float64 // median
	MinMiBps  float64
	MaxMiBps  float64
	CPUPerGiB float64 // median of user+sys seconds per GiB uploaded
	// ServerCPUPerGiB is the median server CPU seconds per GiB (0 when the server was not
	// watched).
	ServerCPUPerGiB float64
	PeakBytes       int64 // highest over the runs
	IdleBytes       int64 // median
	MemMethod       string
	Note            string
}

// Summarize turns records into rows, in server (as first measured), size, kind and Impls() order.
func Summarize(recs []Record) []Row {
	type k struct {
		server string
		impl   string
		size   int64
		kind   string
	}
	groups := map[k][]Record{}
	var keys []k
	servers := map[string]int{}
	for _, r := range recs {
		if _, ok := servers[r.Server]; !ok {
			servers[r.Server] = len(servers)
		}
		key := k{r.Server, r.Impl, r.Size, r.Kind}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], r)
	}
	order := map[string]int{}
	roles := map[string]Role{}
	defaults := map[string]bool{}
	for i, im := range Impls() {
		order[im.Name], roles[im.Name], defaults[im.Name] = i, im.Role, im.Defaults
	}
	slices.SortFunc(keys, func(a, b k) int {
		return cmp.Or(cmp.Compare(servers[a.server], servers[b.server]), cmp.Compare(a.size, b.size), cmp.Compare(a.kind, b.kind), cmp.Compare(order[a.impl], order[b.impl]))
	})
	var rows []Row
	for _, key := range keys {
		g := groups[key]
		var speeds, cpus, idles, srvs []float64
		var peak int64
		for _, r := range g {
			speeds = append(speeds, mibps(r.Size, r.Seconds))
			cpus = append(cpus, r.CPUSeconds/(float64(r.Size)/(1<<30)))
			idles = append(idles, float64(r.IdleBytes))
			srvs = append(srvs, r.ServerCPUSeconds/(float64(r.Size)/(1<<30)))
			peak = max(peak, r.PeakBytes)
		}
		rows = append(rows, Row{
			Server: key.server, Impl: key.impl, Role: roles[key.impl], Defaults: defaults[key.impl], Size: key.size, Kind: key.kind, Runs: len(g),
			MiBps: median(speeds), MinMiBps: slices.Min(speeds), MaxMiBps: slices.Max(speeds),
			CPUPerGiB: median(cpus), ServerCPUPerGiB: median(srvs), PeakBytes: peak, IdleBytes: int64(median(idles)),
			MemMethod: g[0].MemMethod, Note: g[len(g)-1].Note,
		})
	}
	return rows
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Verdict is one target checked for one safeput implementation on one server at one size and kind.
type Verdict struct {
	Server string
	Impl   string
	Size   int64
	Kind   string
	Target string
	Got    string
	Met    bool
	NA     bool // the figure it needs was not measured (a peer or the ceiling left out)
}

// Targets are the goals the issue sets for safeput; the harness reports them, nothing asserts
// them.
const (
	TargetPeerRatio = 1.3
	// TargetDefaultsPeerRatio is the goal at defaults (no profile, no flags): at least the best
	// peer, whose integrity is at most what safeput's defaults prove.
	TargetDefaultsPeerRatio = 1.0
	TargetCeilingRatio      = 0.85
	TargetMemSlack          = 16 << 20
)

// Ratios returns safeput's median throughput over the best peer's and over the ceiling's for
// row's server, size and kind (0 when that figure is missing), and the best peer's name.
func Ratios(rows []Row, row Row) (peer, ceiling float64, bestPeer string) {
	var best, raw float64
	for _, r := range rows {
		if r.Server != row.Server || r.Size != row.Size || r.Kind != row.Kind {
			continue
		}
		switch r.Role {
		case RolePeer:
			if r.MiBps > best {
				best, bestPeer = r.MiBps, r.Impl
			}
		case RoleCeiling:
			raw = r.MiBps
		}
	}
	if best > 0 {
		peer = row.MiBps / best
	}
	if raw > 0 {
		ceiling = row.MiBps / raw
	}
	return peer, ceiling, bestPeer
}

// Evaluate checks every target for every safeput row.
func Evaluate(rows []Row, p Params) []Verdict {
	var out []Verdict
	memLimit := int64(p.Concurrency)*p.PartSize + TargetMemSlack
	for _, row := range rows {
		if row.Role != RoleSafeput {
			continue
		}
		v := func(target, got string, met, na bool) {
			out = append(out, Verdict{Server: row.Server, Impl: row.Impl, Size: row.Size, Kind: row.Kind, Target: target, Got: got, Met: met && !na, NA: na})
		}
		peer, ceiling, best := Ratios(rows, row)
		want := TargetPeerRatio
		if row.Defaults {
			want = TargetDefaultsPeerRatio
		}
		v(fmt.Sprintf("throughput ≥ %.1f× best peer", want), fmt.Sprintf("%.2f× %s", peer, best), peer >= want, peer == 0)
		v(fmt.Sprintf("throughput ≥ %.0f %% of raw single PUT", TargetCeilingRatio*100), fmt.Sprintf("%.0f %%", ceiling*100), ceiling >= TargetCeilingRatio, ceiling == 0)
		v(fmt.Sprintf("peak memory ≤ %d × %s + 16 MiB = %s", p.Concurrency, bytesize.Format(p.PartSize), bytesize.Format(memLimit)),
			fmt.Sprintf("%.1f MiB", mib(row.PeakBytes)), row.PeakBytes <= memLimit, false)
		var worst string
		var peers int
		lowest := true
		for _, r := range rows {
			if r.Role == RolePeer && r.Server == row.Server && r.Size == row.Size && r.Kind == row.Kind {
				peers++
				if row.CPUPerGiB >= r.CPUPerGiB {
					lowest = false
					worst = r.Impl
				}
			}
		}
		got := fmt.Sprintf("%.2f s/GiB", row.CPUPerGiB)
		if !lowest {
			got += " (not below " + worst + ")"
		}
		v("CPU per GiB lower than every peer", got, lowest, peers == 0)
	}
	return out
}

// Env is what the report says about the run besides the figures.
type Env struct {
	Command  string
	Date     string
	Machine  string
	Load     string
	DataDir  string
	Versions []string
	Params   Params
	Runs     int
}

// Markdown renders the report: settings, one table per size and source kind, the peers'
// integrity settings, and the targets.
func Markdown(env Env, rows []Row, verdicts []Verdict) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Latest run\n\n")
	w("- Command: `%s`\n", env.Command)
	w("- Date: %s\n", env.Date)
	w("- Machine: %s\n", env.Machine)
	w("- Load average (1/5/15 min) at start → end: %s\n", env.Load)
	w("- Data (source files and server storage): %s\n", env.DataDir)
	w("- Settings: part size %s, concurrency %d, %d run(s) per implementation, peer payload signing `%s`\n",
		bytesize.Format(env.Params.PartSize), env.Params.Concurrency, env.Runs, env.Params.Signing)
	if len(rows) > 0 {
		w("- Memory column: %s\n", rows[0].MemMethod)
	}
	w("- Versions: %s\n\n", strings.Join(env.Versions, ", "))

	type group struct {
		server string
		size   int64
		kind   string
	}
	var groups []group
	for _, r := range rows {
		g := group{r.Server, r.Size, r.Kind}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	table := func(g group, defaults bool) {
		w("| implementation | MiB/s (median) | min–max | CPU s/GiB | server CPU s/GiB | peak memory MiB | idle MiB | vs best peer | vs raw PUT | note |\n")
		w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, r := range rows {
			if r.Server != g.server || r.Size != g.size || r.Kind != g.kind || r.Defaults != defaults {
				continue
			}
			peer, ceiling, _ := Ratios(rows, r)
			w("| %s | %.1f | %.1f–%.1f | %.2f | %s | %.1f | %.1f | %s | %s | %s |\n", r.Impl, r.MiBps, r.MinMiBps, r.MaxMiBps, r.CPUPerGiB,
				serverCPU(r.ServerCPUPerGiB), mib(r.PeakBytes), mib(r.IdleBytes), ratio(peer), pct(ceiling), r.Note)
		}
		w("\n")
	}
	for _, g := range groups {
		w("### %s%s, %s source\n\n", serverPrefix(g.server), bytesize.Format(g.size), g.kind)
		table(g, false)
		if slices.ContainsFunc(rows, func(r Row) bool {
			return r.Defaults && r.Server == g.server && r.Size == g.size && r.Kind == g.kind
		}) {
			w("At defaults (no profile, no flags; the same run, compared with the peers above):\n\n")
			table(g, true)
		}
	}

	var impls []string
	for _, r := range rows {
		if !slices.Contains(impls, r.Impl) {
			impls = append(impls, r.Impl)
		}
	}
	b.WriteString(IntegrityTable(env.Params, impls))
	w("### Targets\n\n")
	w("| server | implementation | size | source | target | measured | met |\n|---|---|---|---|---|---|---|\n")
	for _, v := range verdicts {
		w("| %s | %s | %s | %s | %s | %s | %s |\n", cmp.Or(v.Server, "–"), v.Impl, bytesize.Format(v.Size), v.Kind, v.Target, v.Got, mark(v))
	}
	w("\n")
	return b.String()
}

// serverPrefix is how a table heading names its server ("minio: "), nothing for an unnamed one.
func serverPrefix(server string) string {
	if server == "" {
		return ""
	}
	return server + ": "
}

// VerdictLines is the plain-text target summary for the terminal.
func VerdictLines(verdicts []Verdict) string {
	var b strings.Builder
	for _, v := range verdicts {
		fmt.Fprintf(&b, "%-4s %-9s %-14s %-8s %-8s %-44s %s\n", strings.ToUpper(markWord(v)), v.Server, v.Impl, bytesize.Format(v.Size), v.Kind, v.Target, v.Got)
	}
	return b.String()
}

func mark(v Verdict) string {
	switch {
	case v.NA:
		return "n/a"
	case v.Met:
		return "✅ met"
	}
	return "❌ not met"
}

func markWord(v Verdict) string {
	switch {
	case v.NA:
		return "n/a"
	case v.Met:
		return "MET"
	}
	return "MISS"
}

func serverCPU(f float64) string {
	if f <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", f)
}

func ratio(f float64) string {
	if f == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", f)
}

func pct(f float64) string {
	if f == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", f*100)
}
