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

// Command changelog checks CHANGELOG.md (make verify) and prints a
// release's notes from it (the release workflow).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `usage:
  changelog [-file CHANGELOG.md] check
      fails unless the changelog is in the Keep a Changelog format: "## [Unreleased]" first,
      then "## [x.y.z] - YYYY-MM-DD" sections newest first, each with "### Added", "Changed",
      "Deprecated", "Removed", "Fixed" or "Security" sections
  changelog [-file CHANGELOG.md] [-link-base URL] notes VERSION
      prints the section of VERSION (x.y.z or vx.y.z, or Unreleased) without its heading:
      the release notes; fails when the changelog has no such section, or it is empty.
      -link-base makes relative link targets absolute (the notes are read on another page
      than the changelog), e.g. https://github.com/OWNER/REPO/blob/TAG/`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "changelog:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("changelog", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("file", "CHANGELOG.md", "the changelog")
	linkBase := fs.String("link-base", "", "notes: the URL relative link targets are resolved against")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	args = fs.Args()
	if len(args) == 0 {
		return errors.New(usage)
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	c, problems := Parse(string(data))
	switch {
	case args[0] == "check" && len(args) == 1:
		if len(problems) > 0 {
			return fmt.Errorf("%s is not in the Keep a Changelog format:\n%w", *file, errors.Join(problems...))
		}
		return nil
	case args[0] == "notes" && len(args) == 2:
		if len(problems) > 0 {
			return fmt.Errorf("%s is not in the Keep a Changelog format (changelog check):\n%w", *file, errors.Join(problems...))
		}
		s := c.Section(args[1])
		if s == nil {
			return fmt.Errorf("%s has no section for %s: move the changes under [Unreleased] to \"## [%s] - YYYY-MM-DD\" before tagging", *file, args[1], strings.TrimPrefix(args[1], "v"))
		}
		if s.Body == "" {
			return fmt.Errorf("%s: the section of %s is empty", *file, args[1])
		}
		_, err := fmt.Fprintln(stdout, AbsoluteLinks(s.Body, *linkBase))
		return err
	default:
		return errors.New(usage)
	}
}
