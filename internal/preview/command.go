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

package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kcp-syncagent/api-syncagent/internal/discovery"
	"github.com/kcp-syncagent/api-syncagent/internal/nsmeta"
	"github.com/kcp-syncagent/api-syncagent/internal/projection"
	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
)

const usage = `Usage: api-syncagent preview -f PUBLISHEDRESOURCE (--crd FILE | --kubeconfig FILE) [--object FILE]... [flags]

Shows, without contacting kcp, what a PublishedResource would publish (the projected CRD, the
APIResourceSchema and its name, the permission claims) and, for each sample kcp object, the
local copy the agent would create, the status it would write back into kcp, and what each
related entry would look for where. The source type comes from a CRD file, or from the service
cluster with --kubeconfig (CRDs and built-in types, as the agent reads them). A status in a
sample object stands for the status the service reports on its local copy. Exit status: 0, 1
when the PublishedResource or an input is invalid (with the agent's ConfigValid messages), 2 for
a bad command line.

Flags:
`

// Command runs the preview command with args (without "preview") and
// returns its exit status.
func Command(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("preview", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	prFile := fs.StringP("published-resource", "f", "", "The PublishedResource (YAML or JSON file).")
	crdFile := fs.String("crd", "", "The source CRD (file).")
	kubeconfig := fs.String("kubeconfig", "", "Read the source type (and related types) from this service cluster instead.")
	objects := fs.StringArray("object", nil, "Sample kcp objects (file, one or more documents; repeatable). Objects of other kinds are samples of kcp-side related objects.")
	serviceObjects := fs.StringArray("service-object", nil, "Samples of service-side related objects, of objects of the source type that ask to be imported (label syncagent.kcp.io/import-into), and Namespaces (file; repeatable).")
	agentName := fs.String("agent-name", "api-syncagent", "The agent name written into the labels.")
	workspace := fs.String("workspace", "preview-cluster", "The logical cluster name of the samples' workspace.")
	workspacePath := fs.String("workspace-path", "", "The samples' workspace path (with spec.enableWorkspacePaths).")
	nsLabels := fs.StringArray("namespace-label", nil, "A label key=template for the namespaces the agent creates, as the agent's flag (repeatable).")
	nsAnnotations := fs.StringArray("namespace-annotation", nil, "An annotation key=template for the namespaces the agent creates, as the agent's flag (repeatable).")
	format := fs.StringP("output", "o", "yaml", "Output format: yaml or json.")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(status int, format string, a ...any) int {
		fmt.Fprintf(stderr, "preview: "+format+"\n", a...)
		return status
	}
	switch {
	case *prFile == "":
		return fail(2, "-f PUBLISHEDRESOURCE is required")
	case (*crdFile == "") == (*kubeconfig == ""):
		return fail(2, "exactly one of --crd and --kubeconfig is required")
	case *format != "yaml" && *format != "json":
		return fail(2, "-o %q: yaml or json", *format)
	case fs.NArg() > 0:
		return fail(2, "unexpected arguments %q", fs.Args())
	}

	in := Input{AgentName: *agentName, Workspace: *workspace, WorkspacePath: *workspacePath, TypeInfo: builtinTypeInfo}
	md, err := nsmeta.Parse(*nsLabels, *nsAnnotations)
	if err != nil {
		return fail(2, "%v", err)
	}
	in.NamespaceMetadata = md
	pr := &syncagentv1alpha1.PublishedResource{}
	if err := readOne(*prFile, syncagentv1alpha1.SchemeGroupVersion.WithKind("PublishedResource"), pr); err != nil {
		return fail(1, "%v", err)
	}
	in.PublishedResource = pr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if *crdFile != "" {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := readOne(*crdFile, apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), crd); err != nil {
			return fail(1, "%v", err)
		}
		in.Source = crd
	} else {
		resolver, err := clusterResolver(*kubeconfig)
		if err != nil {
			return fail(1, "%v", err)
		}
		if in.Source, err = resolver.Resolve(ctx, projection.SourceGK(pr)); err != nil {
			return fail(1, "the source type: %v", err)
		}
		in.TypeInfo = resolver.ResourceInfo
	}
	for _, f := range *objects {
		objs, err := ReadObjects(f)
		if err != nil {
			return fail(1, "%v", err)
		}
		in.Objects = append(in.Objects, objs...)
	}
	for _, f := range *serviceObjects {
		objs, err := ReadObjects(f)
		if err != nil {
			return fail(1, "%v", err)
		}
		in.ServiceObjects = append(in.ServiceObjects, objs...)
	}

	out, err := Run(ctx, in)
	if invalid := (*InvalidError)(nil); errors.As(err, &invalid) {
		fmt.Fprintln(stderr, "preview: the PublishedResource is invalid (ConfigValid False, InvalidConfiguration):")
		for _, m := range invalid.Messages {
			fmt.Fprintf(stderr, "  - %s\n", m)
		}
		return 1
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	var data []byte
	if *format == "json" {
		data, err = json.MarshalIndent(out, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(out)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	_, _ = stdout.Write(data)
	return 0
}

// readOne decodes the one object of a file, which must be of type want,
// strictly: a field the type does not have (a typo, or a field of another
// version) is an error, as the API server would drop it silently.
func readOne(path string, want schema.GroupVersionKind, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if tm.GroupVersionKind() != want {
		return fmt.Errorf("%s: want a %s %s, got apiVersion %q kind %q", path, want.GroupVersion(), want.Kind, tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ReadObjects decodes every object of a file (YAML documents or JSON; the
// items of a List).
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: an object without apiVersion or kind", path)
		}
		if u.IsList() {
			// kubectl get -o yaml: the items.
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
}

// clusterResolver reads types from the service cluster of a kubeconfig,
// as the agent does.
func clusterResolver(kubeconfig string) (*discovery.Resolver, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := ctrlruntimeclient.New(cfg, ctrlruntimeclient.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return discovery.NewResolver(cfg, c)
}

// clusterScoped are the cluster-scoped kinds among client-go's types.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "StorageClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true,
	"PriorityClass": true, "RuntimeClass": true, "IngressClass": true, "CertificateSigningRequest": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "FlowSchema": true, "PriorityLevelConfiguration": true,
}

// builtinTypeInfo finds Kubernetes' built-in types without a cluster
// (plural guessed from the kind, as for nearly every built-in type).
func builtinTypeInfo(gvr schema.GroupVersionResource) (discovery.TypeInfo, error) {
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.GroupVersion() != gvr.GroupVersion() || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		plural, _ := metaPlural(gvk)
		if plural == gvr.Resource {
			return discovery.TypeInfo{GVK: gvk, Namespaced: !clusterScoped[gvk.Kind]}, nil
		}
	}
	return discovery.TypeInfo{}, fmt.Errorf("%s is not a built-in type: pass --kubeconfig to read it from the service cluster", gvr)
}

func metaPlural(gvk schema.GroupVersionKind) (string, string) {
	plural, singular := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource, singular.Resource
}
