// Copyright 2026 The api-syncagent Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Unreleased is the heading of the changes since the last release.
const Unreleased = "Unreleased"

// Kinds are the change types a version's section may have, each at most
// once.
var Kinds = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}

// Section is one "## [...]" part of the changelog.
type Section struct {
	// Name is Unreleased or the version (without a v).
	Name string
	// Date is the release date (empty for Unreleased).
	Date string
	// Yanked is set when the heading ends with [YANKED].
	Yanked bool
	// Line is the heading's line number (1-based).
	Line int
	// Body is the text after the heading, up to the next one, without
	// leading and trailing blank lines.
	Body string
}

// Changelog is a parsed CHANGELOG.md.
type Changelog struct {
	Sections []Section
}

var (
	versionHeading = regexp.MustCompile(`^## \[([^\]]+)\] - (\S+)( \[YANKED\])?$`)
	linkDefinition = regexp.MustCompile(`^\[([^\]]+)\]: \S+( "[^"]*")?$`)
	semverPattern  = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

// Parse reads a changelog in the Keep a Changelog format and reports every
// way in which it is not:
//   - the first line is "# Changelog", and no other line is a level-1
//     heading;
//   - "## [Unreleased]" is the first section; every other section is
//     "## [x.y.z] - YYYY-MM-DD" (optionally followed by " [YANKED]") with
//     a semantic version and a real date, newest first (versions
//     descending, dates not increasing), each version once;
//   - "### " headings are one of Kinds, at most once per section, and
//     each holds at least one entry; a release has at least one;
//   - link reference definitions ("[1.0.0]: https://…") come after the
//     sections and name one of them.
//
// The changelog is returned even when it has problems.
func Parse(text string) (*Changelog, []error) {
	c := &Changelog{}
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: "+format, append([]any{line}, args...)...))
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) == 0 || lines[0] != "# Changelog" {
		fail(1, `the first line must be "# Changelog"`)
	}

	var (
		current   *Section
		body      []string
		kinds     map[string]bool
		kind      string // the current "### " heading
		kindLine  int
		kindItems int
		links     = map[string]int{}
		inLinks   bool
		inFence   bool
	)
	endKind := func() {
		if kind != "" && kindItems == 0 {
			fail(kindLine, "### %s has no entries", kind)
		}
		kind, kindItems = "", 0
	}
	endSection := func() {
		endKind()
		if current == nil {
			return
		}
		current.Body = strings.Trim(strings.Join(body, "\n"), "\n")
		if current.Name != Unreleased && len(kinds) == 0 {
			fail(current.Line, "release %s lists no changes (no ### %s section)", current.Name, strings.Join(Kinds, "/"))
		}
		c.Sections = append(c.Sections, *current)
		current, body = nil, nil
	}

	for i, line := range lines {
		n := i + 1
		fence := strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")
		if fence {
			inFence = !inFence
		}
		if inFence || fence {
			if current != nil {
				body = append(body, line)
				if kind != "" {
					kindItems++
				}
			}
			continue
		}
		if m := linkDefinition.FindStringSubmatch(line); m != nil {
			if _, dup := links[m[1]]; dup {
				fail(n, "a second link definition for [%s]", m[1])
			}
			links[m[1]] = n
			if !inLinks {
				endSection()
				inLinks = true
			}
			continue
		}
		if inLinks && strings.TrimSpace(line) != "" {
			fail(n, "only link definitions may follow the link definitions at the end")
			continue
		}
		switch {
		case n == 1:
			// The title, checked above.
		case strings.HasPrefix(line, "# "):
			fail(n, "a second level-1 heading (only the first line is one)")
		case strings.HasPrefix(line, "## "):
			endSection()
			current, kinds = heading(c, line, n, fail), map[string]bool{}
		case strings.HasPrefix(line, "### "):
			if current == nil {
				fail(n, "%q before the first version heading", line)
				continue
			}
			endKind()
			kind, kindLine = strings.TrimPrefix(line, "### "), n
			switch {
			case !contains(Kinds, kind):
				fail(n, "### %s: the change types are %s", kind, strings.Join(Kinds, ", "))
			case kinds[kind]:
				fail(n, "a second ### %s in %s", kind, current.Name)
			}
			kinds[kind] = true
			body = append(body, line)
		default:
			if current != nil {
				body = append(body, line)
				if kind != "" && strings.TrimSpace(line) != "" {
					kindItems++
				}
			}
		}
	}
	if inFence {
		fail(len(lines), "a code block that is never closed")
	}
	endSection()

	if len(c.Sections) == 0 || c.Sections[0].Name != Unreleased {
		fail(1, "the first section must be ## [%s]", Unreleased)
	}
	// Link labels are case-insensitive in Markdown and name a heading's
	// label as it is ([v1.0.0] names no ## [1.0.0]).
	for name, n := range links {
		named := false
		for _, sec := range c.Sections {
			named = named || strings.EqualFold(sec.Name, name)
		}
		if !named {
			fail(n, "link definition [%s] names no section", name)
		}
	}
	return c, errs
}

// heading parses a "## " line into a section and checks its place among
// the ones before it.
func heading(c *Changelog, line string, n int, fail func(int, string, ...any)) *Section {
	s := &Section{Line: n}
	if line == "## ["+Unreleased+"]" {
		s.Name = Unreleased
		if len(c.Sections) > 0 {
			fail(n, "## [%s] must be the first section", Unreleased)
		}
		return s
	}
	m := versionHeading.FindStringSubmatch(line)
	if m == nil {
		fail(n, `%q: want "## [Unreleased]" or "## [x.y.z] - YYYY-MM-DD"`, line)
		s.Name = strings.TrimPrefix(line, "## ")
		return s
	}
	s.Name, s.Date, s.Yanked = m[1], m[2], m[3] != ""
	if !semverPattern.MatchString(s.Name) {
		fail(n, "%q is not a semantic version (x.y.z, without a v)", s.Name)
	}
	if _, err := time.Parse(time.DateOnly, s.Date); err != nil {
		fail(n, "%q is not a date (YYYY-MM-DD)", s.Date)
	}
	if c.Section(s.Name) != nil {
		fail(n, "a second section for %s", s.Name)
	}
	if prev := lastRelease(c); prev != nil {
		if semverPattern.MatchString(prev.Name) && semverPattern.MatchString(s.Name) && Compare(s.Name, prev.Name) >= 0 {
			fail(n, "%s follows %s: versions go newest first", s.Name, prev.Name)
		}
		if s.Date > prev.Date {
			fail(n, "%s is dated %s, after %s's %s: newest first", s.Name, s.Date, prev.Name, prev.Date)
		}
	}
	return s
}

func lastRelease(c *Changelog) *Section {
	for i := len(c.Sections) - 1; i >= 0; i-- {
		if c.Sections[i].Name != Unreleased {
			return &c.Sections[i]
		}
	}
	return nil
}

// Section returns the section of a version (with or without a leading v)
// or Unreleased; nil if there is none.
func (c *Changelog) Section(name string) *Section {
	if name != Unreleased {
		name = strings.TrimPrefix(name, "v")
	}
	for i := range c.Sections {
		if c.Sections[i].Name == name {
			return &c.Sections[i]
		}
	}
	return nil
}

var inlineLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// AbsoluteLinks prefixes the relative targets of inline links ("[text](docs/a.md)")
// with base; targets with a scheme, absolute paths and fragments stay as
// they are, and so does the text when base is empty.
func AbsoluteLinks(text, base string) string {
	if base == "" {
		return text
	}
	return inlineLink.ReplaceAllStringFunc(text, func(m string) string {
		target := m[2 : len(m)-1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "/") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			return m
		}
		return "](" + base + strings.TrimPrefix(target, "./") + ")"
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Compare orders two semantic versions by precedence (build metadata is
// ignored): -1, 0 or +1. Both must match the semantic version pattern.
func Compare(a, b string) int {
	pa, pb := semverPattern.FindStringSubmatch(a), semverPattern.FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		if c := compareNumbers(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	// A pre-release has lower precedence than the release.
	switch {
	case pa[4] == pb[4]:
		return 0
	case pa[4] == "":
		return 1
	case pb[4] == "":
		return -1
	}
	ia, ib := strings.Split(pa[4], "."), strings.Split(pb[4], ".")
	for i := 0; i < len(ia) && i < len(ib); i++ {
		_, errA := strconv.ParseUint(ia[i], 10, 64)
		_, errB := strconv.ParseUint(ib[i], 10, 64)
		var c int
		switch {
		case errA == nil && errB == nil:
			c = compareNumbers(ia[i], ib[i])
		case errA == nil:
			c = -1 // numeric identifiers come first
		case errB == nil:
			c = 1
		default:
			c = strings.Compare(ia[i], ib[i])
		}
		if c != 0 {
			return c
		}
	}
	return compareInts(len(ia), len(ib))
}

// compareNumbers compares decimal numbers without leading zeros, of any
// length.
func compareNumbers(a, b string) int {
	if c := compareInts(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func compareInts(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
