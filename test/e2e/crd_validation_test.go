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

//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestPublishedResourceValidation installs the generated CRD into a real
// kube-apiserver and creates PublishedResources that each rule must accept
// or reject (contract §2.10: reference rules R1-R6, our rules A1-A6, enums
// and required fields).
func TestPublishedResourceValidation(t *testing.T) {
	t.Parallel()
	svc := framework.StartServiceCluster(t)

	const obj = `{path: spec.x}`
	testcases := []struct {
		name string
		spec string
		// wantErr is empty for a valid object, else a substring of the error.
		wantErr string
	}{
		{name: "minimal", spec: `resource: {apiGroup: example.com, kind: Thing}`},
		{name: "core group", spec: `resource: {apiGroup: "", kind: ConfigMap}`},
		{name: "missing resource", spec: `naming: {name: x}`, wantErr: "spec.resource: Required value"},
		{name: "missing kind", spec: `resource: {apiGroup: example.com}`, wantErr: "spec.resource.kind: Required value"},
		{name: "everything valid", spec: `
resource: {apiGroup: example.com, kind: Thing, versions: [v1, v2]}
filter:
  namespace: {matchLabels: {a: b}}
  resource: {matchExpressions: [{key: a, operator: Exists}]}
naming: {name: "{{ .Object.metadata.name }}", namespace: "$remoteClusterName"}
enableWorkspacePaths: true
projection: {group: kcp.example.com, versions: {v1: v1beta1}, scope: Namespaced, kind: Widget, plural: widgets, shortNames: [], categories: [all]}
mutation:
  spec:
  - delete: {path: spec.a}
  - regex: {path: spec.b, pattern: "x", replacement: "y"}
  - template: {path: spec.c, template: "{{ .Value }}"}
  - cel: {path: spec.d, expression: "value + 1"}
  status:
  - delete: {path: status.x}
related:
- identifier: credentials
  origin: service
  kind: Secret
  object: {reference: ` + obj + `}
- identifier: config
  origin: kcp
  group: example.com
  version: v1
  resource: things
  identityHash: abc
  projection: {group: other.example.com}
  object:
    selector: {matchLabels: {"{{ .ClusterName }}": x}, rewrite: {template: {template: "{{ .Value }}"}}}
    namespace: {template: {template: "ns"}}
  cleanup: true
  watch: {byOwner: {}}
  syncStatus: true
- identifier: status-up
  origin: service
  version: v1
  resource: configmaps
  object: {template: {template: x}}
  watch: {bySelector: {matchLabels: {a: b}}}
  syncStatus: true
synchronization: {enabled: false}
`},
		{name: "projection scope enum", spec: `{resource: {apiGroup: a, kind: B}, projection: {scope: Global}}`, wantErr: `spec.projection.scope: Unsupported value: "Global"`},
		{name: "synchronization needs enabled", spec: `{resource: {apiGroup: a, kind: B}, synchronization: {}}`, wantErr: "spec.synchronization.enabled: Required value"},

		// A1, A2
		{name: "A1 version and versions", spec: `resource: {apiGroup: a, kind: B, version: v1, versions: [v2]}`, wantErr: "version (deprecated) and versions are mutually exclusive"},
		{name: "A1 version and empty versions is fine", spec: `resource: {apiGroup: a, kind: B, version: v1, versions: []}`},
		{name: "A2 projection version and versions", spec: `{resource: {apiGroup: a, kind: B}, projection: {version: v1, versions: {v1: v2}}}`, wantErr: "version (deprecated) and versions are mutually exclusive"},
		// A3 and required mutation fields
		{name: "A3 empty mutation", spec: `{resource: {apiGroup: a, kind: B}, mutation: {spec: [{}]}}`, wantErr: "a mutation must configure one of delete, regex, template or cel"},
		{name: "A3 empty status mutation", spec: `{resource: {apiGroup: a, kind: B}, mutation: {status: [{}]}}`, wantErr: "a mutation must configure one of delete, regex, template or cel"},
		{name: "A3 several members accepted", spec: `{resource: {apiGroup: a, kind: B}, mutation: {spec: [{delete: {path: a}, regex: {path: b}}]}}`},
		{name: "template needs template", spec: `{resource: {apiGroup: a, kind: B}, mutation: {spec: [{template: {path: a}}]}}`, wantErr: "spec.mutation.spec[0].template.template: Required value"},
		{name: "cel needs expression", spec: `{resource: {apiGroup: a, kind: B}, mutation: {spec: [{cel: {path: a}}]}}`, wantErr: "spec.mutation.spec[0].cel.expression: Required value"},
		{name: "delete needs path", spec: `{resource: {apiGroup: a, kind: B}, mutation: {spec: [{delete: {}}]}}`, wantErr: "spec.mutation.spec[0].delete.path: Required value"},

		// R1-R6 on related resources
		{name: "R1 neither kind nor GVR", spec: related(`{identifier: a, origin: kcp, object: {reference: ` + obj + `}}`), wantErr: "must specify either kind (deprecated) or group, version, resource"},
		{name: "R1 kind and GVR", spec: related(`{identifier: a, origin: kcp, kind: Secret, version: v1, resource: secrets, object: {reference: ` + obj + `}}`), wantErr: "must specify either kind (deprecated) or group, version, resource"},
		{name: "R2 resource without version", spec: related(`{identifier: a, origin: kcp, resource: secrets, object: {reference: ` + obj + `}}`), wantErr: "resource and version must be configured together or not at all"},
		{name: "R3 group without GVR", spec: related(`{identifier: a, origin: kcp, kind: Secret, group: example.com, object: {reference: ` + obj + `}}`), wantErr: "configuring a group also requires a version and resource"},
		{name: "R4 identity hash without group", spec: related(`{identifier: a, origin: kcp, version: v1, resource: secrets, identityHash: x, object: {reference: ` + obj + `}}`), wantErr: "identity hashes can only be used with GVRs"},
		{name: "R5 service status sync without watch", spec: related(`{identifier: a, origin: service, kind: Secret, syncStatus: true, object: {reference: ` + obj + `}}`), wantErr: "watch must be configured when origin is service and syncStatus is true"},
		{name: "R5 kcp status sync without watch is fine", spec: related(`{identifier: a, origin: kcp, kind: Secret, syncStatus: true, object: {reference: ` + obj + `}}`)},
		{name: "R6 watch with both modes", spec: related(`{identifier: a, origin: kcp, kind: Secret, watch: {byOwner: {}, bySelector: {}}, object: {reference: ` + obj + `}}`), wantErr: "exactly one of byOwner or bySelector must be set"},
		{name: "R6 watch with no mode", spec: related(`{identifier: a, origin: kcp, kind: Secret, watch: {}, object: {reference: ` + obj + `}}`), wantErr: "exactly one of byOwner or bySelector must be set"},
		{name: "origin enum", spec: related(`{identifier: a, origin: both, kind: Secret, object: {reference: ` + obj + `}}`), wantErr: `Unsupported value: "both"`},
		{name: "kind enum", spec: related(`{identifier: a, origin: kcp, kind: Pod, object: {reference: ` + obj + `}}`), wantErr: `Unsupported value: "Pod"`},
		{name: "related needs identifier", spec: related(`{origin: kcp, kind: Secret, object: {reference: ` + obj + `}}`), wantErr: "spec.related[0].identifier: Required value"},
		{name: "related needs object", spec: related(`{identifier: a, origin: kcp, kind: Secret}`), wantErr: "spec.related[0].object: Required value"},
		{name: "reference needs path", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {reference: {}}}`), wantErr: "spec.related[0].object.reference.path: Required value"},
		{name: "selector needs rewrite", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {selector: {matchLabels: {a: b}}}}`), wantErr: "spec.related[0].object.selector.rewrite: Required value"},
		{name: "namespace selector needs rewrite", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {template: {template: x}, namespace: {selector: {}}}}`), wantErr: "spec.related[0].object.namespace.selector.rewrite: Required value"},

		// A4-A6
		{name: "A4 object without mechanism", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {}}`), wantErr: "one of reference, selector or template must be configured"},
		{name: "A4 namespace without mechanism", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {reference: ` + obj + `, namespace: {}}}`), wantErr: "one of reference, selector or template must be configured"},
		{name: "A5 rewrite without mechanism", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {selector: {rewrite: {}}}}`), wantErr: "one of regex or template must be configured"},
		{name: "A6 duplicate identifiers", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {reference: `+obj+`}}`, `{identifier: a, origin: kcp, kind: ConfigMap, object: {reference: `+obj+`}}`), wantErr: "identifiers of related resources must be unique"},
		{name: "filter operator enum", spec: `{resource: {apiGroup: a, kind: B}, filter: {resource: {matchExpressions: [{key: k, operator: Equals, values: [v]}]}}}`, wantErr: "matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"},
		{name: "namespace filter operator enum", spec: `{resource: {apiGroup: a, kind: B}, filter: {namespace: {matchExpressions: [{key: k, operator: in}]}}}`, wantErr: "matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist"},
		{name: "valid operators", spec: `{resource: {apiGroup: a, kind: B}, filter: {resource: {matchExpressions: [{key: k, operator: In, values: [v]}, {key: l, operator: DoesNotExist}]}}}`},
		// Related selectors sit in a list: CEL's cost budget does not allow
		// the rule there (ConfigValid reports them; see internal/validation).
		{name: "related selector operators are left to ConfigValid", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {selector: {matchExpressions: [{key: k, operator: Contains}], rewrite: {template: {template: x}}}}}`)},
		{name: "A6 distinct identifiers", spec: related(`{identifier: a, origin: kcp, kind: Secret, object: {reference: `+obj+`}}`, `{identifier: b, origin: kcp, kind: ConfigMap, object: {reference: `+obj+`}}`)},
	}

	for i, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			pr := &unstructured.Unstructured{}
			spec := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.spec), &spec); err != nil {
				t.Fatalf("bad test spec: %v", err)
			}
			pr.SetAPIVersion("syncagent.kcp.io/v1alpha1")
			pr.SetKind("PublishedResource")
			pr.SetName(fmt.Sprintf("case-%d", i))
			pr.Object["spec"] = spec

			err := svc.Client.Create(t.Context(), pr)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("valid object rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("invalid object accepted, want error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

// related returns a minimal spec with the given related resources (flow-style YAML).
func related(items ...string) string {
	return `{resource: {apiGroup: a, kind: B}, related: [` + strings.Join(items, ", ") + `]}`
}
