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

package options

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/labels"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := New()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	o.Complete()
	return o
}

func TestOptions_Validate(t *testing.T) {
	base := []string{"--kcp-kubeconfig=/kcp", "--namespace=agent"}
	testcases := []struct {
		name          string
		args          []string
		wantErrs      []string // substrings that must all appear
		wantWarning   string
		wantAgentName string
		// check, if set, checks the parsed options.
		check func(t *testing.T, o *Options)
	}{
		{
			name:          "endpoint slice ref defaults the agent name",
			args:          append(base, "--apiexportendpointslice-ref=example"),
			wantAgentName: "example-syncagent",
		},
		{
			name:          "apiexport ref defaults the agent name from that ref",
			args:          append(base, "--apiexport-ref=legacy"),
			wantAgentName: "legacy-syncagent",
		},
		{
			name:          "explicit agent name wins",
			args:          append(base, "--apiexport-ref=legacy", "--agent-name=mine"),
			wantAgentName: "mine",
		},
		{
			name:     "neither ref",
			args:     base,
			wantErrs: []string{"--apiexportendpointslice-ref", "--apiexport-ref", "neither"},
		},
		{
			name:     "both refs",
			args:     append(base, "--apiexport-ref=a", "--apiexportendpointslice-ref=b"),
			wantErrs: []string{"--apiexportendpointslice-ref", "--apiexport-ref", "both"},
		},
		{
			name:     "missing required flags are all listed",
			args:     []string{"--apiexport-ref=a"},
			wantErrs: []string{"--kcp-kubeconfig is required", "--namespace is required"},
		},
		{
			name:     "explicit agent name must be DNS-1035",
			args:     append(base, "--apiexport-ref=a", "--agent-name=1bad.name"),
			wantErrs: []string{`--agent-name "1bad.name" is invalid`},
		},
		{
			name:          "defaulted agent name with dots is accepted with a warning",
			args:          append(base, "--apiexport-ref=my.export"),
			wantWarning:   "not a DNS-1035 label",
			wantAgentName: "my.export-syncagent",
		},
		{
			name:     "defaulted agent name that is no label value",
			args:     append(base, "--apiexportendpointslice-ref="+strings.Repeat("x", 60)),
			wantErrs: []string{"set --agent-name explicitly"},
		},
		{
			name:     "invalid selector",
			args:     append(base, "--apiexport-ref=a", "--published-resource-selector=a in (b"),
			wantErrs: []string{"--published-resource-selector"},
		},
		{
			name:     "unknown controller",
			args:     append(base, "--apiexport-ref=a", "--disabled-controllers=sync,bogus"),
			wantErrs: []string{`unknown controller "bogus"`},
		},
		{
			name:          "known controllers, repeated flag",
			args:          append(base, "--apiexport-ref=a", "--disabled-controllers=sync", "--disabled-controllers=apiexport,apiresourceschema"),
			wantAgentName: "a-syncagent",
		},
		{
			name:          "log format is case-insensitive",
			args:          append(base, "--apiexport-ref=a", "--log-format=console"),
			wantAgentName: "a-syncagent",
		},
		{
			name:     "bad log format",
			args:     append(base, "--apiexport-ref=a", "--log-format=xml"),
			wantErrs: []string{`--log-format "xml" is invalid`},
		},
		{
			name:     "bad patrol mode and negative interval are both listed",
			args:     append(base, "--apiexport-ref=a", "--patrol-mode=fix", "--patrol-interval=-1m", "--unused-kcp-informer-timeout=-1s"),
			wantErrs: []string{`--patrol-mode "fix" is invalid: must be repair or report`, "--patrol-interval must not be negative", "--unused-kcp-informer-timeout must not be negative"},
		},
		{
			name:          "patrol off, report mode",
			args:          append(base, "--apiexport-ref=a", "--patrol-mode=report", "--patrol-interval=0"),
			wantAgentName: "a-syncagent",
		},
		{
			name:     "bad sync workers and event level are both listed",
			args:     append(base, "--apiexport-ref=a", "--sync-workers=0", "--event-level=Warnings"),
			wantErrs: []string{"--sync-workers must be positive", `--event-level "Warnings" is invalid: must be normal or warning`},
		},
		{
			name:          "warning Events only, 16 workers",
			args:          append(base, "--apiexport-ref=a", "--event-level=warning", "--sync-workers=16"),
			wantAgentName: "a-syncagent",
			check: func(t *testing.T, o *Options) {
				if o.EventLevel != EventLevelWarning || o.SyncWorkers != 16 {
					t.Errorf("event level %q, sync workers %d", o.EventLevel, o.SyncWorkers)
				}
			},
		},
		{
			name:     "bad namespace",
			args:     []string{"--kcp-kubeconfig=/kcp", "--namespace=Not_OK", "--apiexport-ref=a"},
			wantErrs: []string{`--namespace "Not_OK" is invalid`},
		},
		{
			name:     "bad endpoint URL rewrite",
			args:     []string{"--kcp-kubeconfig=/kcp", "--namespace=ns", "--apiexport-ref=a", "--endpoint-url-rewrite=shard-1=https://b"},
			wantErrs: []string{`--endpoint-url-rewrite "shard-1=https://b": "shard-1" is not an absolute http(s) URL`},
		},
		{
			name:     "bad namespace metadata",
			args:     []string{"--kcp-kubeconfig=/kcp", "--namespace=ns", "--apiexport-ref=a", "--namespace-label=syncagent.kcp.io/x=y"},
			wantErrs: []string{`--namespace-label "syncagent.kcp.io/x": the key is reserved`},
		},
		{
			name:     "namespace label value that renders invalid",
			args:     []string{"--kcp-kubeconfig=/kcp", "--namespace=ns", "--apiexport-ref=a", "--namespace-label=team=a b"},
			wantErrs: []string{`namespace label team: the value "a b" is not a valid label value`},
		},
	}

	for _, tc := range testcases {
		t.Run(tc.name, func(t *testing.T) {
			o := parse(t, tc.args...)
			warnings, err := o.Validate()

			if len(tc.wantErrs) == 0 && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			for _, want := range tc.wantErrs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v does not contain %q", err, want)
				}
			}
			if tc.wantWarning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.wantWarning)) {
				t.Errorf("warnings %q do not contain %q", warnings, tc.wantWarning)
			}
			if tc.wantWarning == "" && len(warnings) > 0 {
				t.Errorf("unexpected warnings: %q", warnings)
			}
			if tc.wantAgentName != "" && o.AgentName != tc.wantAgentName {
				t.Errorf("agent name = %q, want %q", o.AgentName, tc.wantAgentName)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

func TestOptions_Defaults(t *testing.T) {
	o := parse(t)
	if o.MetricsAddress != "127.0.0.1:8085" || o.HealthAddress != "" || o.LogFormat != "JSON" || o.EnableLeaderElection {
		t.Errorf("unexpected defaults: %+v", o)
	}
	if o.SyncWorkers != 4 || o.EventLevel != "normal" {
		t.Errorf("sync workers %d, event level %q; want the reference's 4 and every Event", o.SyncWorkers, o.EventLevel)
	}
	if !o.MetricsEnabled() {
		t.Error("metrics must be enabled by default")
	}
	if o.HealthEnabled() {
		t.Error("the health listener must be off by default")
	}
	if o := parse(t, "--enable-leader-election=true"); !o.EnableLeaderElection {
		t.Error("--enable-leader-election=true must enable leader election")
	}
}

// TestOptions_ListenerAddresses covers the spellings with which reference
// users turn the listeners off or on: controller-runtime, which the reference
// hands both flags to, reads "0" and "" as "disabled".
func TestOptions_ListenerAddresses(t *testing.T) {
	testcases := []struct {
		args                []string
		wantHealth, wantMet bool
	}{
		{args: []string{"--health-address", "0", "--metrics-address", "0"}},
		{args: []string{"--health-address=0", "--metrics-address=0"}},
		{args: []string{"--health-address=", "--metrics-address="}},
		{args: []string{"--health-address", "", "--metrics-address", ""}},
		{args: []string{"--health-address", ":8081", "--metrics-address", ":8085"}, wantHealth: true, wantMet: true},
		{args: []string{"--health-address=127.0.0.1:8081", "--metrics-address=0"}, wantHealth: true},
		{args: []string{"--health-address=0", "--metrics-address=127.0.0.1:9090"}, wantMet: true},
	}
	base := []string{"--kcp-kubeconfig", "/kcp", "--namespace", "agent", "--apiexport-ref", "a"}
	for _, tc := range testcases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := parse(t, append(base, tc.args...)...)
			if _, err := o.Validate(); err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if o.HealthEnabled() != tc.wantHealth || o.MetricsEnabled() != tc.wantMet {
				t.Errorf("health enabled = %v, metrics enabled = %v; want %v, %v", o.HealthEnabled(), o.MetricsEnabled(), tc.wantHealth, tc.wantMet)
			}
		})
	}
}

// TestOptions_ReferenceCommandLines parses argument vectors as the
// reference's harnesses and manifests pass them (space-separated values,
// --apiexport-ref alone, no --agent-name, --log-format Console,
// --enable-leader-election=false) and checks each value means the same.
func TestOptions_ReferenceCommandLines(t *testing.T) {
	o := parse(t,
		"--kcp-kubeconfig", "/etc/kcp/kubeconfig",
		"--kubeconfig", "/etc/cluster/kubeconfig",
		"--namespace", "kcp-system",
		"--apiexport-ref", "kcp.example.com",
		"--published-resource-selector", "env in (prod, staging)",
		"--enable-leader-election=false",
		"--kubeconfig-host-override", "https://10.0.0.1:6443",
		"--kubeconfig-ca-file-override", "/etc/ca.crt",
		"--disabled-controllers", "apiexport",
		"--disabled-controllers=apiresourceschema",
		"--log-format", "Console",
		"--log-debug",
		"--health-address", "0",
		"--metrics-address", "0",
	)
	warnings, err := o.Validate()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "not a DNS-1035 label") {
		t.Errorf("warnings = %q, want the one about the dotted default agent name", warnings)
	}
	want := Options{
		KubeconfigFile: "/etc/cluster/kubeconfig", KcpKubeconfigFile: "/etc/kcp/kubeconfig", Namespace: "kcp-system",
		APIExportRef: "kcp.example.com", AgentName: "kcp.example.com-syncagent",
		PublishedResourceSelectorString: "env in (prod, staging)",
		KubeconfigHostOverride:          "https://10.0.0.1:6443", KubeconfigCAFileOverride: "/etc/ca.crt",
		DisabledControllers: []string{"apiexport", "apiresourceschema"},
		LogDebug:            true, LogFormat: "Console",
		HealthAddress: "0", MetricsAddress: "0",
	}
	got := Options{
		KubeconfigFile: o.KubeconfigFile, KcpKubeconfigFile: o.KcpKubeconfigFile, Namespace: o.Namespace,
		APIExportRef: o.APIExportRef, AgentName: o.AgentName,
		PublishedResourceSelectorString: o.PublishedResourceSelectorString,
		KubeconfigHostOverride:          o.KubeconfigHostOverride, KubeconfigCAFileOverride: o.KubeconfigCAFileOverride,
		DisabledControllers: o.DisabledControllers,
		LogDebug:            o.LogDebug, LogFormat: o.LogFormat,
		HealthAddress: o.HealthAddress, MetricsAddress: o.MetricsAddress,
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Options{})); diff != "" {
		t.Errorf("parsed options differ (-want +got):\n%s", diff)
	}
	if o.EnableLeaderElection || o.HealthEnabled() || o.MetricsEnabled() || o.APIExportEndpointSliceRef != "" {
		t.Errorf("leader election %v, health %v, metrics %v, slice ref %q: want all off", o.EnableLeaderElection, o.HealthEnabled(), o.MetricsEnabled(), o.APIExportEndpointSliceRef)
	}
	if !o.PublishedResourceSelector.Matches(labels.Set{"env": "prod"}) || o.PublishedResourceSelector.Matches(labels.Set{"env": "dev"}) {
		t.Errorf("selector %v does not mean env in (prod, staging)", o.PublishedResourceSelector)
	}
}
