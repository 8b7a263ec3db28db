package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Select returns the rows of table that the --controllers items enable, in table order, with
// kube-controller-manager's semantics: "*" enables every controller enabled by default, "foo"
// enables foo, "-foo" disables foo. A group name (a row's Group) stands for the rows of the
// group: "grp" enables those enabled by default and "-grp" disables all; a controller's own
// name wins over its group's, and either wins over "*". A controller that Requires another is
// enabled only with it. An unknown name, a name both enabled and
// disabled, or a selection that enables nothing is an error that names the bad input and the
// known controllers and groups.
func Select(table []Controller, items []string) ([]Controller, error) {
	known, groups := names(table)
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
		if !known[name] && groups[name] == nil {
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
		if !isExplicit && c.Group != "" {
			// A group enables its controllers that are enabled by default: one that is off by
			// default is enabled by its own name.
			enable, isExplicit = explicit[c.Group]
			enable = enable && c.EnabledByDefault
		}
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
	for _, c := range selected {
		for _, needed := range c.Requires {
			if !slices.ContainsFunc(selected, func(s Controller) bool { return s.Name == needed }) {
				return nil, fmt.Errorf("--controllers: %s works through %s, which is not enabled: enable both or neither", c.Name, needed)
			}
		}
	}
	return selected, nil
}

// names returns the controllers' names and, per group, its controllers in table order.
func names(table []Controller) (map[string]bool, map[string][]string) {
	known := map[string]bool{}
	groups := map[string][]string{}
	for _, c := range table {
		known[c.Name] = true
		if c.Group != "" {
			groups[c.Group] = append(groups[c.Group], c.Name)
		}
	}
	return known, groups
}

// KnownControllers says which controllers and groups exist and which controllers "*" leaves
// off.
func KnownControllers(table []Controller) string {
	var all, off, groups []string
	_, members := names(table)
	seen := map[string]bool{}
	for _, c := range table {
		all = append(all, c.Name)
		if !c.EnabledByDefault {
			off = append(off, c.Name)
		}
		if c.Group != "" && !seen[c.Group] {
			seen[c.Group] = true
			groups = append(groups, c.Group+" ("+strings.Join(members[c.Group], ", ")+")")
		}
	}
	msg := "known controllers: " + strings.Join(all, ", ")
	if len(groups) > 0 {
		msg += "; groups: " + strings.Join(groups, ", ")
	}
	if len(off) > 0 {
		msg += "; disabled by default: " + strings.Join(off, ", ")
	}
	return msg
}

// ParseConcurrency parses --concurrency, a comma-separated list of name=workers, into a map
// from controller name to its number of concurrent reconciles. A group name sets each of its
// controllers; a controller's own entry wins over its group's, and a controller named by
// neither gets its row's DefaultWorkers (absent from the map when that is 0: one worker).
func ParseConcurrency(table []Controller, value string) (map[string]int, error) {
	given, err := parseWorkers(table, value)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, c := range table {
		if n, ok := given[c.Name]; ok {
			out[c.Name] = n
		} else if n, ok := given[c.Group]; ok && c.Group != "" {
			out[c.Name] = n
		} else if c.DefaultWorkers > 0 {
			out[c.Name] = c.DefaultWorkers
		}
	}
	return out, nil
}

// parseWorkers returns the workers --concurrency gives each name it lists, a controller's or a
// group's.
func parseWorkers(table []Controller, value string) (map[string]int, error) {
	known, groups := names(table)
	given := map[string]int{}
	if strings.TrimSpace(value) == "" {
		return given, nil
	}
	for _, item := range strings.Split(value, ",") {
		name, count, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--concurrency: %q is not name=workers (for example myapp=4)", item)
		}
		if !known[name] && groups[name] == nil {
			return nil, fmt.Errorf("--concurrency: unknown controller %q; %s", name, KnownControllers(table))
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("--concurrency: workers for %q must be a whole number from 1 to 1000, got %q", name, count)
		}
		if _, dup := given[name]; dup {
			return nil, fmt.Errorf("--concurrency: %q is given twice", name)
		}
		given[name] = n
	}
	return given, nil
}

// Names returns the names of the selected controllers, in table order.
func (s Selection) Names() []string {
	out := make([]string, 0, len(s.Controllers))
	for _, c := range s.Controllers {
		out = append(out, c.Name)
	}
	return out
}
