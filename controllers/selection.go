package controllers

import (
	"fmt"
	"strconv"
	"strings"
)

// Select returns the rows of table that the --controllers items enable, in table order, with
// kube-controller-manager's semantics: "*" enables every controller enabled by default, "foo"
// enables foo, "-foo" disables foo, and an explicit item wins over "*". An unknown name, a
// name both enabled and disabled, or a selection that enables nothing is an error that names
// the bad input and the known controllers.
func Select(table []Controller, items []string) ([]Controller, error) {
	known := map[string]bool{}
	for _, c := range table {
		known[c.Name] = true
	}
	star := false
	explicit := map[string]bool{}
	for _, item := range items {
		item = strings.TrimSpace(item)
		switch item {
		case "*":
			star = true
			continue
		case "", "-":
			return nil, fmt.Errorf("--controllers: empty controller name; %s", KnownControllers(table))
		}
		name, enable := strings.TrimPrefix(item, "-"), !strings.HasPrefix(item, "-")
		if !known[name] {
			return nil, fmt.Errorf("--controllers: unknown controller %q; %s", name, KnownControllers(table))
		}
		if previous, seen := explicit[name]; seen && previous != enable {
			return nil, fmt.Errorf("--controllers: %q is both enabled and disabled", name)
		}
		explicit[name] = enable
	}
	var selected []Controller
	for _, c := range table {
		enable, isExplicit := explicit[c.Name]
		if !isExplicit {
			enable = star && c.EnabledByDefault
		}
		if enable {
			selected = append(selected, c)
		}
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("--controllers=%s enables no controller; %s", strings.Join(items, ","), KnownControllers(table))
	}
	return selected, nil
}

// KnownControllers says which controllers exist and which of them "*" leaves off.
func KnownControllers(table []Controller) string {
	var all, off []string
	for _, c := range table {
		all = append(all, c.Name)
		if !c.EnabledByDefault {
			off = append(off, c.Name)
		}
	}
	msg := "known controllers: " + strings.Join(all, ", ")
	if len(off) > 0 {
		msg += "; disabled by default: " + strings.Join(off, ", ")
	}
	return msg
}

// ParseConcurrency parses --concurrency, a comma-separated list of name=workers, into a map
// from controller name to its number of concurrent reconciles.
func ParseConcurrency(table []Controller, value string) (map[string]int, error) {
	known := map[string]bool{}
	for _, c := range table {
		known[c.Name] = true
	}
	out := map[string]int{}
	if strings.TrimSpace(value) == "" {
		return out, nil
	}
	for _, item := range strings.Split(value, ",") {
		name, count, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--concurrency: %q is not name=workers (for example myapp=4)", item)
		}
		if !known[name] {
			return nil, fmt.Errorf("--concurrency: unknown controller %q; %s", name, KnownControllers(table))
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("--concurrency: workers for %q must be a whole number from 1 to 1000, got %q", name, count)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--concurrency: %q is given twice", name)
		}
		out[name] = n
	}
	return out, nil
}

// Names returns the names of the selected controllers, in table order.
func (s Selection) Names() []string {
	out := make([]string, 0, len(s.Controllers))
	for _, c := range s.Controllers {
		out = append(out, c.Name)
	}
	return out
}
