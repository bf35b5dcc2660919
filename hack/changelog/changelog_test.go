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
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `# Changelog

Some words about the format.

## [Unreleased]

### Fixed

- A bug.

## [1.1.0] - 2026-12-24

### Added

- A feature, with an example:

  ` + "```sh\n  ## not a heading\n  ```" + `

` + "~~~yaml\n# not a title\n## [9.9.9] - 2026-01-01\n~~~" + `

### Security

- A fix.

## [1.1.0-rc.1] - 2026-12-20 [YANKED]

### Changed

- Something.

## [1.0.0] - 2026-12-20

### Added

- Everything.

[unreleased]: https://example.com/compare/v1.1.0...HEAD
[1.1.0]: https://example.com/releases/v1.1.0 "Release 1.1.0"
`

func TestParseGood(t *testing.T) {
	c, errs := Parse(good)
	if len(errs) > 0 {
		t.Fatalf("problems in a good changelog: %v", errs)
	}
	var names []string
	for _, s := range c.Sections {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "Unreleased 1.1.0 1.1.0-rc.1 1.0.0" {
		t.Errorf("sections %s", got)
	}
	if s := c.Section("v1.1.0-rc.1"); s == nil || !s.Yanked || s.Date != "2026-12-20" {
		t.Errorf("1.1.0-rc.1: %+v", s)
	}
	want := "### Added\n\n- A feature, with an example:\n\n  ```sh\n  ## not a heading\n  ```\n\n~~~yaml\n# not a title\n## [9.9.9] - 2026-01-01\n~~~\n\n### Security\n\n- A fix."
	if got := c.Section("1.1.0").Body; got != want {
		t.Errorf("1.1.0's body:\n%s\nwant:\n%s", got, want)
	}
	if got := c.Section("1.0.0").Body; got != "### Added\n\n- Everything." {
		t.Errorf("the last section's body (before the links): %q", got)
	}
}

// TestParseBad: each broken changelog gives a problem that says what is
// wrong, on the right line.
func TestParseBad(t *testing.T) {
	release := "\n## [1.0.0] - 2026-01-02\n\n### Added\n\n- X.\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"no title", "## [Unreleased]\n", `line 1: the first line must be "# Changelog"`},
		{"second title", "# Changelog\n\n# Other\n\n## [Unreleased]\n", "line 3: a second level-1 heading"},
		{"no sections", "# Changelog\n", "the first section must be ## [Unreleased]"},
		{"no unreleased", "# Changelog\n" + release, "the first section must be ## [Unreleased]"},
		{"unreleased later", "# Changelog\n" + release + "\n## [Unreleased]\n", "line 9: ## [Unreleased] must be the first section"},
		{"v in version", "# Changelog\n\n## [Unreleased]\n\n## [v1.0.0] - 2026-01-02\n\n### Added\n\n- X.\n", `"v1.0.0" is not a semantic version`},
		{"two parts", "# Changelog\n\n## [Unreleased]\n\n## [1.0] - 2026-01-02\n\n### Added\n\n- X.\n", `"1.0" is not a semantic version`},
		{"leading zero", "# Changelog\n\n## [Unreleased]\n\n## [1.02.0] - 2026-01-02\n\n### Added\n\n- X.\n", "not a semantic version"},
		{"no date", "# Changelog\n\n## [Unreleased]\n\n## [1.0.0]\n\n### Added\n\n- X.\n", `line 5: "## [1.0.0]": want`},
		{"bad date", "# Changelog\n\n## [Unreleased]\n\n## [1.0.0] - 2026-02-30\n\n### Added\n\n- X.\n", `"2026-02-30" is not a date`},
		{"us date", "# Changelog\n\n## [Unreleased]\n\n## [1.0.0] - 01/02/2026\n\n### Added\n\n- X.\n", `"01/02/2026" is not a date`},
		{"other kind", "# Changelog\n\n## [Unreleased]\n\n### Improved\n\n- X.\n", "line 5: ### Improved: the change types are Added, Changed, Deprecated, Removed, Fixed, Security"},
		{"kind twice", "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- X.\n\n### Added\n\n- Y.\n", "line 9: a second ### Added in Unreleased"},
		{"empty kind", "# Changelog\n\n## [Unreleased]\n\n### Added\n\n### Fixed\n\n- Y.\n", "line 5: ### Added has no entries"},
		{"empty release", "# Changelog\n\n## [Unreleased]\n\n## [1.0.0] - 2026-01-02\n", "line 5: release 1.0.0 lists no changes"},
		{"kind before a version", "# Changelog\n\n### Added\n\n## [Unreleased]\n", `line 3: "### Added" before the first version heading`},
		{"oldest first", "# Changelog\n\n## [Unreleased]\n" + release + "\n## [1.1.0] - 2026-01-03\n\n### Added\n\n- Y.\n", "line 11: 1.1.0 follows 1.0.0: versions go newest first"},
		{"pre-release after its release", "# Changelog\n\n## [Unreleased]\n\n## [1.0.0-rc.1] - 2026-01-01\n\n### Added\n\n- Y.\n" + release, "1.0.0 follows 1.0.0-rc.1"},
		{"dates backwards", "# Changelog\n\n## [Unreleased]\n\n## [1.1.0] - 2026-01-01\n\n### Added\n\n- Y.\n" + release, "1.0.0 is dated 2026-01-02, after 1.1.0's 2026-01-01"},
		{"version twice", "# Changelog\n\n## [Unreleased]\n" + release + release, "a second section for 1.0.0"},
		{"link to nothing", "# Changelog\n\n## [Unreleased]\n\n[2.0.0]: https://example.com\n", "line 5: link definition [2.0.0] names no section"},
		{"link with a v", "# Changelog\n\n## [Unreleased]\n" + release + "\n[v1.0.0]: https://example.com\n", "link definition [v1.0.0] names no section"},
		{"text after links", "# Changelog\n\n## [Unreleased]\n\n[Unreleased]: https://example.com\n\n## [1.0.0] - 2026-01-02\n", "line 7: only link definitions may follow"},
		{"open code block", "# Changelog\n\n## [Unreleased]\n\n### Added\n\n```\n## [1.0.0] - 2026-01-02\n", "a code block that is never closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Parse(tc.text)
			var all []string
			for _, err := range errs {
				all = append(all, err.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Errorf("problems %q, want one containing %q", all, tc.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	// Semantic Versioning 2.0.0's example of precedence, in order.
	ordered := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.2.0", "1.10.0", "2.0.0"}
	for i := range ordered {
		for j := range ordered {
			want := compareInts(i, j)
			if got := Compare(ordered[i], ordered[j]); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	if Compare("1.0.0+build.1", "1.0.0") != 0 {
		t.Error("build metadata counted in the precedence")
	}
}

func TestAbsoluteLinks(t *testing.T) {
	in := "See [a](docs/a.md), [b](./b.md#x), [c](https://c.example/x), [d](#d), [e](/e) and [f]."
	want := "See [a](https://h.example/t/docs/a.md), [b](https://h.example/t/b.md#x), [c](https://c.example/x), [d](#d), [e](/e) and [f]."
	if got := AbsoluteLinks(in, "https://h.example/t/"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := AbsoluteLinks(in, ""); got != in {
		t.Errorf("no base changed the text: %s", got)
	}
}

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommands(t *testing.T) {
	p := write(t, good)
	var out bytes.Buffer
	if err := run([]string{"-file", p, "check"}, &out); err != nil || out.Len() != 0 {
		t.Errorf("check of a good changelog: %v, output %q", err, out.String())
	}
	out.Reset()
	if err := run([]string{"-file", p, "notes", "v1.0.0"}, &out); err != nil || out.String() != "### Added\n\n- Everything.\n" {
		t.Errorf("notes v1.0.0: %v, %q", err, out.String())
	}
	out.Reset()
	if err := run([]string{"-file", p, "notes", "1.1.0-rc.1"}, &out); err != nil || !strings.HasPrefix(out.String(), "### Changed") {
		t.Errorf("notes 1.1.0-rc.1: %v, %q", err, out.String())
	}
	err := run([]string{"-file", p, "notes", "v2.0.0"}, &out)
	if err == nil || !strings.Contains(err.Error(), `no section for v2.0.0: move the changes under [Unreleased] to "## [2.0.0] - YYYY-MM-DD"`) {
		t.Errorf("notes of a missing version: %v", err)
	}

	empty := write(t, "# Changelog\n\n## [Unreleased]\n")
	if err := run([]string{"-file", empty, "check"}, &out); err != nil {
		t.Errorf("a changelog with an empty [Unreleased] (right after a release): %v", err)
	}
	if err := run([]string{"-file", empty, "notes", "Unreleased"}, &out); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("notes of an empty section: %v", err)
	}

	bad := write(t, strings.Replace(good, "### Security", "### Improved", 1))
	if err := run([]string{"-file", bad, "check"}, &out); err == nil || !strings.Contains(err.Error(), "### Improved") {
		t.Errorf("check of a bad changelog: %v", err)
	}
	if err := run([]string{"-file", bad, "notes", "1.0.0"}, &out); err == nil {
		t.Error("notes from a changelog that fails the check")
	}
	for _, args := range [][]string{nil, {"-file", p}, {"-file", p, "notes"}, {"-file", p, "check", "extra"}, {"-file", p, "publish"}, {"-nope"}} {
		if err := run(args, &out); err == nil {
			t.Errorf("%q was accepted", args)
		}
	}
	if err := run([]string{"-file", filepath.Join(t.TempDir(), "missing.md"), "check"}, &out); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestRepositoryChangelog: the project's own changelog passes the check
// (make verify runs it too; this names the problem in go test).
func TestRepositoryChangelog(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-file", "../../CHANGELOG.md", "check"}, &out); err != nil {
		t.Error(err)
	}
}
