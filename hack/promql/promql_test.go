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

package promql

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

var root = filepath.Join("..", "..")

// query is one PromQL expression and where it comes from.
type query struct{ where, expr string }

func TestShippedQueries(t *testing.T) {
	documented := documentedMetrics(t)
	var queries []query
	queries = append(queries, alertQueries(t)...)
	queries = append(queries, dashboardQueries(t)...)
	queries = append(queries, docQueries(t)...)
	if len(queries) < 30 {
		t.Fatalf("found only %d queries: the extraction is broken", len(queries))
	}
	p := parser.NewParser(parser.Options{})
	for _, q := range queries {
		// Grafana's variables are not PromQL: give them a value.
		expr := strings.NewReplacer("$published_resource", "things", "$cluster", "c", "$namespace", "agents", "$job", "agent-metrics", "${datasource}", "x").Replace(q.expr)
		ast, err := p.ParseExpr(expr)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", q.where, q.expr, err)
			continue
		}
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && !documented[baseName(vs.Name)] {
				t.Errorf("%s: %q names %s, which docs/metrics.md does not document", q.where, q.expr, vs.Name)
			}
			return nil
		})
	}
}

// baseName is the metric a histogram's series belong to.
func baseName(series string) string {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if strings.HasPrefix(series, "sync_agent_") && strings.HasSuffix(series, suffix) {
			return strings.TrimSuffix(series, suffix)
		}
	}
	return series
}

func read(t *testing.T, path ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{root}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var tableRow = regexp.MustCompile("(?m)^\\| `([a-z_:]+)[{`].*$")

// documentedMetrics are the metrics of docs/metrics.md's tables.
func documentedMetrics(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for _, m := range tableRow.FindAllStringSubmatch(string(read(t, "docs", "metrics.md")), -1) {
		out[m[1]] = true
	}
	return out
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// docQueries are the sample queries: the first code span of each table
// row's last column.
func docQueries(t *testing.T) []query {
	var out []query
	for _, m := range tableRow.FindAllStringSubmatch(string(read(t, "docs", "metrics.md")), -1) {
		cells := strings.Split(strings.Trim(m[0], "|"), " | ")
		last := cells[len(cells)-1]
		if span := codeSpan.FindStringSubmatch(last); span != nil {
			out = append(out, query{"docs/metrics.md row " + m[1], span[1]})
		}
	}
	return out
}

func alertQueries(t *testing.T) []query {
	var out []query
	for _, r := range alertRules(t) {
		out = append(out, query{"alert " + r.Alert, r.fill(testSelector)})
	}
	return out
}

func dashboardQueries(t *testing.T) []query {
	var doc struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(read(t, "deploy", "charts", "api-syncagent", "files", "dashboard.json"), &doc); err != nil {
		t.Fatal(err)
	}
	var out []query
	for _, p := range doc.Panels {
		for _, tg := range p.Targets {
			out = append(out, query{"dashboard panel " + p.Title, tg.Expr})
		}
	}
	// label_values(metric, label) is Grafana's: its metric must exist.
	labelValues := regexp.MustCompile(`^label_values\(([a-z_:]+)[{,]`)
	variables := 0
	for _, v := range doc.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			out = append(out, query{"dashboard variable", m[1]})
			variables++
		}
	}
	if variables < 4 {
		t.Errorf("found %d label_values variables in the dashboard: the extraction is broken", variables)
	}
	return out
}
