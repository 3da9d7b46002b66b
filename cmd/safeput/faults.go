package main

import (
	"strconv"
	"strings"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/faulty"
)

// parseFaults reads the hidden --fault flag: comma-separated OP:FAULT[:N] items, where OP is a
// store operation (PutObject, UploadPart, ..., or * for any), FAULT a predefined faulty fault
// (SlowDown, Forbidden, Truncate, ...) and N the number of calls to fault (default: every call).
// It exists so tests can drive every exit code through a real server; it is hidden from --help.
func parseFaults(spec string) ([]faulty.Rule, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	byName := map[string]faulty.Fault{}
	for _, f := range faulty.All() {
		byName[strings.ToLower(f.String())] = f
	}
	var rules []faulty.Rule
	for _, item := range strings.Split(spec, ",") {
		parts := strings.Split(strings.TrimSpace(item), ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, usageErr("--fault %q: want OP:FAULT[:N]", item)
		}
		f, ok := byName[strings.ToLower(parts[1])]
		if !ok {
			return nil, usageErr("--fault %q: unknown fault %q", item, parts[1])
		}
		if len(parts) == 3 {
			n, err := strconv.Atoi(parts[2])
			if err != nil || n < 1 {
				return nil, usageErr("--fault %q: N must be a positive number", item)
			}
			rules = append(rules, faulty.First(parts[0], n, f))
			continue
		}
		rules = append(rules, faulty.Always(parts[0], f))
	}
	return rules, nil
}

func wrapFaults(st store.Store, rules []faulty.Rule) store.Store { return faulty.New(st, rules...) }
