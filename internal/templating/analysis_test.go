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

package templating

import (
	"strings"
	"testing"
)

func TestReadsOnlyWorkspace(t *testing.T) {
	testcases := []struct {
		name, text, side string
		want             bool
	}{
		{name: "plain text", text: "credentials", side: "service", want: true},
		{name: "workspace fields", text: "{{ .ClusterName }}-{{ .ClusterPath | sha3short }}", side: "service", want: true},
		{name: "the consumer's object", text: "{{ .Object.metadata.namespace }}", side: "service", want: false},
		{name: "fixed on the service side", text: `{{ if eq .Side "kcp" }}{{ .Object.metadata.namespace }}{{ else }}credentials{{ end }}`, side: "service", want: true},
		{name: "operands swapped and ne", text: `{{ if ne "service" .Side }}{{ .Object.metadata.namespace }}{{ else }}fixed{{ end }}`, side: "service", want: true},
		{name: "the object on the service side", text: `{{ if eq .Side "service" }}{{ .Object.metadata.namespace }}{{ else }}fixed{{ end }}`, side: "service", want: false},
		{name: "the kcp side of the same template", text: `{{ if eq .Side "kcp" }}{{ .Object.metadata.namespace }}{{ else }}credentials{{ end }}`, side: "kcp", want: false},
		{name: "else if chains", text: `{{ if eq .Side "kcp" }}{{ .Object.x }}{{ else if eq .ClusterName "a" }}a{{ else }}b{{ end }}`, side: "service", want: true},
		{name: "a condition on the object", text: `{{ if .Object.spec.x }}a{{ else }}b{{ end }}`, side: "service", want: false},
		{name: "the whole data", text: `{{ index . "Object" }}`, side: "service", want: false},
		{name: "root variable", text: `{{ $.Object.metadata.name }}`, side: "service", want: false},
		{name: "declared variable", text: `{{ $x := .ClusterName }}{{ $x }}`, side: "service", want: false},
		{name: "with rebinds the dot", text: `{{ with .Object }}{{ .metadata.name }}{{ end }}`, side: "service", want: false},
		{name: "no side given: .Side is data", text: `{{ if eq .Side "kcp" }}a{{ else }}b{{ end }}`, side: "", want: false},
		{name: "no side given: workspace fields", text: `{{ .ClusterName }}`, side: "", want: true},
		{name: "the agent's environment is the owner's", text: `{{ env "NS" }}`, side: "service", want: true},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := Parse("t", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := ReadsOnlyWorkspace(tpl, tc.side); got != tc.want {
				t.Errorf("ReadsOnlyWorkspace(%q, %q) = %v, want %v", tc.text, tc.side, got, tc.want)
			}
		})
	}
}

func TestMentionsWorkspace(t *testing.T) {
	for text, want := range map[string]bool{
		"{{ .ClusterName }}":               true,
		"{{ $.ClusterPath }}":              true,
		`{{ index . "ClusterName" }}`:      true,
		"{{ .Object.metadata.namespace }}": false,
		"shared":                           false,
	} {
		tpl, err := Parse("t", text)
		if err != nil {
			t.Fatal(err)
		}
		if got := MentionsWorkspace(tpl); got != want {
			t.Errorf("MentionsWorkspace(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestVolatile(t *testing.T) {
	for text, want := range map[string]string{
		"{{ .ClusterName | sha3short }}":                      "",
		`{{ now | date "2006" }}-{{ randAlpha 4 }}-{{ now }}`: "now,randAlpha",
		`{{ if .x }}{{ uuidv4 }}{{ end }}`:                    "uuidv4",
		`{{ "now" }} uuidv4`:                                  "",
		`{{ with $x := ago .t }}{{ $x }}{{ end }}`:            "ago",
	} {
		tpl, err := Parse("t", text)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(Volatile(tpl), ","); got != want {
			t.Errorf("Volatile(%q) = %q, want %q", text, got, want)
		}
	}
}
