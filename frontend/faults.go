package frontend

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/safeput/safeput/store/storetest/faulty"
)

// ParseFaults reads a fault specification for tests: comma-separated OP:FAULT[:N] items, where
// OP is a store operation (PutObject, UploadPart, ..., or * for any), FAULT a predefined faulty
// fault (SlowDown, Forbidden, Truncate, ...) and N the number of calls to fault (default: every
// call). It lets tests drive every exit code through a real server; front ends keep it out of
// sight of ordinary users.
func ParseFaults(spec string) ([]faulty.Rule, error) {
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
			return nil, fmt.Errorf("%q: want OP:FAULT[:N]", item)
		}
		f, ok := byName[strings.ToLower(parts[1])]
		if !ok {
			return nil, fmt.Errorf("%q: unknown fault %q", item, parts[1])
		}
		if len(parts) == 3 {
			n, err := strconv.Atoi(parts[2])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%q: N must be a positive number", item)
			}
			rules = append(rules, faulty.First(parts[0], n, f))
			continue
		}
		rules = append(rules, faulty.Always(parts[0], f))
	}
	return rules, nil
}
