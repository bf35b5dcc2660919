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

func render(t *testing.T, text string, data any) (string, error) {
	t.Helper()
	tpl, err := Parse("test", text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tpl.Execute(&b, data)
	return b.String(), err
}

func TestFuncs(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "foo", "namespace": "default"}, "n": 3}
	clusterScoped := map[string]any{"metadata": map[string]any{"name": "foo"}}
	testcases := []struct {
		name, text string
		data       any
		want       string
		wantErr    bool
	}{
		{name: "sha3sum", text: `{{ "" | sha3sum }}`, want: "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"},
		{name: "sha3short default length", text: `{{ .metadata.name | sha3short }}`, data: obj, want: sha3sum("foo")[:20]},
		{name: "sha3short explicit length", text: `{{ .metadata.name | sha3short 8 }}`, data: obj, want: sha3sum("foo")[:8]},
		{name: "sha3short is capped at 64", text: `{{ .metadata.name | sha3short 100 }}`, data: obj, want: sha3sum("foo")},
		{name: "sha3short rejects zero", text: `{{ .metadata.name | sha3short 0 }}`, data: obj, wantErr: true},
		{name: "sha3short rejects two lengths", text: `{{ .metadata.name | sha3short 1 2 }}`, data: obj, wantErr: true},
		{
			name: "default naming works for cluster-scoped objects (contract §7 #3)",
			text: `{{ .metadata.namespace | sha3short }}-{{ .metadata.name | sha3short }}`, data: clusterScoped,
			want: "a7ffc6f8bf1ed76651c1-" + sha3sum("foo")[:20],
		},
		{name: "shortHash of a string hashes its bytes", text: `{{ shortHash "foo" }}`, want: "0beec7b5ea3f0fdbc95d"},
		{name: "shortHash of a number hashes JSON plus newline", text: `{{ shortHash .n }}`, data: obj, want: "a3db5c13ff90a3696327"},
		{name: "sprig text functions", text: `{{ "Hello" | lower | trunc 3 }}`, want: "hel"},
		{name: "no HTML escaping", text: `{{ "a&b<'c'>" }}`, want: "a&b<'c'>"},
	}
	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.text, tc.data)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
