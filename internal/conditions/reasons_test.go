package conditions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEveryReasonIsIndexed: every condition and Event reason constant in
// the agent's code (a Reason... constant with a string value) has a row
// in docs/troubleshooting.md's "Every reason" table.
func TestEveryReasonIsIndexed(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, index, ok := strings.Cut(string(doc), "\n## Every reason\n")
	if !ok {
		t.Fatal(`docs/troubleshooting.md has no "## Every reason" section`)
	}
	indexed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\|").FindAllStringSubmatch(index, -1) {
		indexed[m[1]] = true
	}

	found := 0
	for _, dir := range []string{"internal", filepath.Join("sdk", "apis")} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						value, _ := strconv.Unquote(lit.Value)
						found++
						if !indexed[value] {
							t.Errorf("%s (%s, %s) is not in docs/troubleshooting.md's \"Every reason\" table", value, name.Name, path)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 40 {
		t.Errorf("found %d reason constants, expected over 40: the scan is broken", found)
	}
}
