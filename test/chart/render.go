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

// Package chart renders the Helm chart in deploy/charts/api-syncagent with
// the Helm SDK (no helm binary), as `helm template` would. Its unit tests
// lint the chart and assert the rendered objects; the e2e test
// (test/e2e/chart_test.go) installs what Render returns into a real
// kube-apiserver.
package chart

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Dir returns the chart's directory.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy", "charts", "api-syncagent")
}

// CRDSourceDir returns the directory of the generated CRDs the chart copies.
func CRDSourceDir() string {
	return filepath.Join(Dir(), "..", "..", "crd")
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Render renders the chart for an install of release name into namespace
// with the given values (merged over values.yaml and validated against
// values.schema.json) and returns the objects in template order.
func Render(name, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	files, err := renderFiles(name, namespace, values)
	if err != nil {
		return nil, err
	}

	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)

	var objs []*unstructured.Unstructured
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		for i, doc := range documentSeparator.Split(files[n], -1) {
			if len(bytes.TrimSpace([]byte(doc))) == 0 {
				continue
			}
			m := map[string]any{}
			if err := yaml.UnmarshalStrict([]byte(doc), &m); err != nil {
				return nil, fmt.Errorf("%s, document %d: invalid YAML: %w\n%s", n, i, err, doc)
			}
			if len(m) == 0 {
				continue
			}
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs, nil
}

// Notes renders the chart like Render and returns the text of NOTES.txt,
// which helm prints after an install.
func Notes(name, namespace string, values map[string]any) (string, error) {
	files, err := renderFiles(name, namespace, values)
	if err != nil {
		return "", err
	}
	for n, text := range files {
		if strings.HasSuffix(n, "NOTES.txt") {
			return text, nil
		}
	}
	return "", errors.New("the chart has no NOTES.txt")
}

// renderFiles renders every template of the chart, by file name.
func renderFiles(name, namespace string, values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(Dir())
	if err != nil {
		return nil, fmt.Errorf("failed to load the chart: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(ch, values, opts, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		return nil, fmt.Errorf("failed to compute the values: %w", err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("failed to render the chart: %w", err)
	}
	return files, nil
}

// Find returns the rendered object of the given kind and name, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
