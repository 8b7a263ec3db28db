// Package markdown reads what the docs' tests and generators need of a Markdown page: the
// anchors GitHub gives its headings, and its links. Fenced code blocks are skipped.
package markdown

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Anchor is the fragment GitHub gives a heading: lower case, spaces as dashes, every other
// character but letters, digits, '-' and '_' dropped.
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Page is what a Markdown page holds outside its code blocks.
type Page struct {
	// Anchors are its headings' fragments; a repeated heading gets "-1", "-2", ... as on GitHub.
	Anchors map[string]bool
	// Links are the targets of its inline links, in order.
	Links []Link
}

// Link is an inline link's target.
type Link struct {
	Line   int
	Target string
}

var (
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	link    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	code    = regexp.MustCompile("`[^`]*`")
)

// Parse reads a page.
func Parse(text string) (Page, error) {
	p := Page{Anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			a := Anchor(m[1])
			if k := seen[a]; k > 0 {
				p.Anchors[a+"-"+strconv.Itoa(k)] = true
			} else {
				p.Anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(line, ""), -1) {
			p.Links = append(p.Links, Link{Line: n, Target: m[1]})
		}
	}
	return p, s.Err()
}
