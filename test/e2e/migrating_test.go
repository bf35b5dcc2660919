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
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// guideCommand is one command of a guide's ```sh blocks: a command line, or
// a heredoc that writes a file.
type guideCommand struct {
	line       string
	file, body string
}

var (
	shBlock     = regexp.MustCompile("(?s)```sh\n(.*?)```")
	heredocFile = regexp.MustCompile(`^cat > (\S+) <<'EOF'$`)
)

// guideCommands returns the commands of a guide under docs/, in order.
func guideCommands(t *testing.T, guide string) []guideCommand {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", guide))
	framework.Must(t, err, "read the guide")
	var cmds []guideCommand
	for _, block := range shBlock.FindAllSubmatch(data, -1) {
		lines := strings.Split(string(block[1]), "\n")
		for i := 0; i < len(lines); i++ {
			line := strings.TrimSpace(lines[i])
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if m := heredocFile.FindStringSubmatch(line); m != nil {
				end := i + 1
				for end < len(lines) && lines[end] != "EOF" {
					end++
				}
				cmds = append(cmds, guideCommand{file: m[1], body: strings.Join(lines[i+1:end], "\n") + "\n"})
				i = end
				continue
			}
			cmds = append(cmds, guideCommand{line: line})
		}
	}
	return cmds
}

// TestMigratingGuide follows docs/migrating.md, running every command of the
// guide as written, in order, against a service cluster in the state the
// reference agent leaves: its PublishedResource CRD (no conditions), a
// published and bound API, a kcp object with its finalizer, its local copy
// without our agent label and with a field only the service side set, and
// the reference's state Secret. kubectl commands run with the test bed's
// kubectl; the guide's `helm upgrade` renders this repository's chart with
// the guide's values files (Helm's own rendering, test/chart) and runs the
// agent as the rendered Deployment does (as TestChart). The checks are what
// the guide tells the reader to look at: the same schemas and state
// Secrets as before, READY True, the Lease, the agent label on the copy;
// and a kcp change afterwards keeps the service-side field.
func TestMigratingGuide(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kubectl, err := framework.RequireEnv(framework.EnvKubectlBin)
	framework.Must(t, err, "kubectl")
	const (
		exportName = "my-export"
		release    = "my-agent"
	)

	// What the reference left: the API published and bound, then the
	// reference's CRD and objects.
	org := testKcp.CreateOrg(t)
	framework.CreateAPIExport(t, org, exportName)
	framework.GrantAgent(t, org, exportName, exportName)
	svc := framework.StartServiceCluster(t)
	svc.CreateNamespace(t, framework.AgentNamespace)
	kcpKubeconfigPath := framework.WriteKubeconfig(t, framework.ArtifactsDir(t), "kcp.kubeconfig", testKcp.AgentConfig(org.Path))
	svc.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, svc.Client.Create(ctx, thingsPR()), "create PublishedResource")
	before := framework.StartAgent(t, "--kcp-kubeconfig="+kcpKubeconfigPath, "--kubeconfig="+svc.Kubeconfig,
		"--namespace="+framework.AgentNamespace, "--apiexport-ref="+exportName, "--agent-name="+release, "--log-format=Console")
	svc.WaitForPublishedResource(t, "things", schemaTimeout, "ExportReady", exportReady)
	exp, err := getExport(ctx, org, exportName)
	framework.Must(t, err, "get export")
	consumer := testKcp.BindConsumer(t, org, exportName, exp.Spec.PermissionClaims)
	svc.WaitForPublishedResource(t, "things", syncTimeout, "schema ready", schemaReady)
	before.Stop(30 * time.Second)
	installReferenceCRD(t, svc)
	remote, local := referenceLeftovers(t, svc, consumer, "migrated")
	createKcpKubeconfigSecret(t, svc, kcpKubeconfigPath)

	// The guide, command by command.
	work := t.TempDir()
	framework.Must(t, os.Symlink(filepath.Join(framework.RepoRoot(), "deploy"), filepath.Join(work, "deploy")), "link deploy/")
	seen := map[string]string{} // output of commands that run twice (before and after)
	var agent *deploymentAgent
	for _, cmd := range guideCommands(t, "migrating.md") {
		if cmd.file != "" {
			framework.Must(t, os.WriteFile(filepath.Join(work, cmd.file), []byte(cmd.body), 0o600), "write %s", cmd.file)
			continue
		}
		t.Logf("$ %s", cmd.line)
		args := strings.Fields(cmd.line)
		switch args[0] {
		case "helm":
			agent = helmUpgrade(t, svc, work, args)
		case "kubectl":
			check, known := migratingChecks(seen, cmd.line, local.GetName())
			if !known {
				t.Fatalf("the guide runs %q, which this test does not know: add its check", cmd.line)
			}
			framework.WaitFor(t, 2*time.Minute, cmd.line, func(ctx context.Context) (bool, error) {
				c := exec.CommandContext(ctx, kubectl, args[1:]...)
				c.Dir = work
				c.Env = append(os.Environ(), "KUBECONFIG="+svc.Kubeconfig)
				out, err := c.CombinedOutput()
				if err != nil {
					return false, &cmdError{string(out), err}
				}
				return check(string(out))
			})
		default:
			t.Fatalf("the guide runs %q, which is neither kubectl nor helm", cmd.line)
		}
	}
	if agent == nil {
		t.Fatal("the guide never installed the agent")
	}

	// Afterwards: a kcp change is merged against the reference's state.
	framework.Must(t, consumer.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "migrated"}, remote), "get the kcp object")
	framework.Must(t, unstructured.SetNestedField(remote.Object, "red", "spec", "color"), "set color")
	framework.Must(t, consumer.Client.Update(ctx, remote), "update the kcp object")
	framework.WaitFor(t, syncTimeout, "the kcp change merged into the copy", func(ctx context.Context) (bool, error) {
		if err := svc.Client.Get(ctx, types.NamespacedName{Namespace: local.GetNamespace(), Name: local.GetName()}, local); err != nil {
			return false, err
		}
		color, _, _ := unstructured.NestedString(local.Object, "spec", "color")
		return color == "red", nil
	})
	if v, _, _ := unstructured.NestedString(local.Object, "spec", "v1"); v != "by-operator" {
		t.Errorf("the service-side field was overwritten after the switch: spec.v1 = %q", v)
	}
}

// migratingChecks returns the check of one of the guide's kubectl commands:
// a command that runs before and after the switch must print the same both
// times; the others must show what the guide promises.
func migratingChecks(seen map[string]string, line, localName string) (func(out string) (bool, error), bool) {
	same := func(out string) (bool, error) {
		if prev, ok := seen[line]; ok && prev != out {
			return false, fmt.Errorf("before the switch it printed\n%s\nnow\n%s", prev, out)
		}
		seen[line] = out
		return true, nil
	}
	checks := map[string]func(string) (bool, error){
		"kubectl get publishedresources -o custom-columns=NAME:.metadata.name,SCHEMA:.status.resourceSchemaName": func(out string) (bool, error) {
			if !regexp.MustCompile(`things\s+v[0-9a-f]{8}\.things\.kcp\.example\.com`).MatchString(out) {
				return false, errors.New("no schema name for things")
			}
			return same(out)
		},
		"kubectl -n syncagent get secrets -l syncagent.kcp.io/object-state=true -o name": func(out string) (bool, error) {
			if !strings.Contains(out, "secret/obj-state-") {
				return false, errors.New("no state Secret")
			}
			return same(out)
		},
		"kubectl apply --server-side --force-conflicts -f deploy/crd/": func(out string) (bool, error) {
			return strings.Contains(out, "publishedresources.syncagent.kcp.io serverside-applied"), nil
		},
		"kubectl get publishedresources": func(out string) (bool, error) {
			return regexp.MustCompile(`(?m)^things\s+Thing\s+example\.com\s+\S+\s+True\b`).MatchString(out), nil
		},
		"kubectl -n syncagent get lease syncagent.my-agent": func(out string) (bool, error) {
			return strings.Contains(out, "syncagent.my-agent"), nil
		},
		"kubectl get things -A -l syncagent.kcp.io/agent-name=my-agent": func(out string) (bool, error) {
			return strings.Contains(out, localName), nil
		},
		"kubectl get events -n default --field-selector involvedObject.kind=PublishedResource": func(string) (bool, error) {
			return true, nil
		},
	}
	check, ok := checks[line]
	return check, ok
}

// helmUpgrade does what the guide's `helm upgrade RELEASE CHART -n NS -f
// FILE...` does for this repository's chart: render it with the values
// files (later files win per top-level key, as Helm merges maps), apply the
// objects and run the agent as the rendered Deployment (startAsDeployment).
// Health and metrics ports come from the test bed (free ports), on top of
// the guide's values.
func helmUpgrade(t *testing.T, svc *framework.ServiceCluster, work string, args []string) *deploymentAgent {
	t.Helper()
	if len(args) < 4 || args[1] != "upgrade" || args[3] != "deploy/charts/api-syncagent" {
		t.Fatalf("the guide's helm command %q is not `helm upgrade RELEASE deploy/charts/api-syncagent ...`", strings.Join(args, " "))
	}
	release, namespace := args[2], ""
	values := map[string]any{}
	for i := 4; i < len(args); i++ {
		switch args[i] {
		case "-n", "--namespace":
			i++
			namespace = args[i]
		case "-f", "--values":
			i++
			data, err := os.ReadFile(filepath.Join(work, args[i]))
			framework.Must(t, err, "read %s", args[i])
			file := map[string]any{}
			framework.Must(t, yaml.Unmarshal(data, &file), "parse %s", args[i])
			maps.Copy(values, file)
		default:
			t.Fatalf("the guide's helm command has an argument this test does not know: %s", args[i])
		}
	}
	if namespace != framework.AgentNamespace {
		t.Fatalf("the guide installs into %q, the test bed's agent namespace is %q", namespace, framework.AgentNamespace)
	}
	objs := renderChart(t, release, values)
	applyObjects(t, svc.Client, objs)
	agent := startAsDeployment(t, svc, objs)
	agent.waitProbe(t, "readiness", agent.container.ReadinessProbe)
	return agent
}
