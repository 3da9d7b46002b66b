package faulty

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a fault specification: comma-separated OP:FAULT[:N] items, where OP is an
// operation (PutObject, UploadPart, ..., or * for any), FAULT a predefined fault named as its
// String (SlowDown, Forbidden, Truncate, ..., in any case) and N the number of calls to fault
// (default: every call). The front ends' test builds read their hidden fault settings with it
// (the CLI's --fault, the C ABI's test_faults), so their tests can drive every exit code through
// a real server.
func Parse(spec string) ([]Rule, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	byName := map[string]Fault{}
	for _, f := range All() {
		byName[strings.ToLower(f.String())] = f
	}
	var rules []Rule
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
			rules = append(rules, First(parts[0], n, f))
			continue
		}
		rules = append(rules, Always(parts[0], f))
	}
	return rules, nil
}
