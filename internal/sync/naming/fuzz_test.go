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

package naming

import (
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

// FuzzDefaultNames: whatever namespace, name and cluster a consumer's
// object has, the default names are valid Kubernetes names (a DNS label
// for the namespace, a DNS subdomain for the name) and deterministic.
func FuzzDefaultNames(f *testing.F) {
	f.Add("default", "foo", "1084s8ceexsehjm2")
	f.Add("", "x", "abc")
	f.Add("ns", "ü-ñ/..", "root:org")
	n, err := NewNamer(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, namespace, name, cluster string) {
		ctx := Context{Object: obj(namespace, name), ClusterName: cluster}
		got, err := n.Name(ctx)
		if err != nil {
			t.Fatalf("default name of %q/%q: %v", namespace, name, err)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("default name %q of %q/%q is invalid: %v", got, namespace, name, errs)
		}
		if again, _ := n.Name(ctx); again != got {
			t.Errorf("non-deterministic name: %q vs %q", got, again)
		}
		if _, err := n.Namespace(ctx); err != nil {
			t.Errorf("default namespace: %v", err)
		}
	})
}

// FuzzNamingPatterns: a naming pattern (a service owner's input) either
// fails to compile or renders, for a consumer's object, without a panic;
// legacy placeholder patterns always compile.
func FuzzNamingPatterns(f *testing.F) {
	f.Add("{{ .Object.metadata.name | sha3short 8 }}", "foo")
	f.Add("$remoteClusterName-$remoteNameHash", "foo")
	f.Add("{{ .Object.spec.x }}-{{ .ClusterName }}", "a")
	f.Add("{{ shortHash .Object.metadata.name }}", "b")
	f.Add("{{ if .Object.metadata.namespace }}{{ .Object.metadata.namespace }}{{ end }}", "")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if expensive.MatchString(pattern) {
			t.Skip("functions whose cost the template's own arguments choose are not fuzzed")
		}
		n, err := NewNamer(&syncagentv1alpha1.ResourceNaming{Name: pattern})
		if err != nil {
			return
		}
		_, _ = n.Name(Context{Object: obj("default", name), ClusterName: "abc", ClusterPath: "root:abc"})
	})
}

// expensive matches the sprig functions whose time or memory the template
// text itself chooses (a service owner's choice, not a consumer's).
var expensive = regexp.MustCompile(`repeat|until|seq|indent|range|gen[A-Z]|derivePassword|bcrypt|htpasswd|rand|getHostByName`)
