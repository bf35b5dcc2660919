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
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kcpapisv1alpha1 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	syncagentv1alpha1 "github.com/kcp-syncagent/api-syncagent/sdk/apis/syncagent/v1alpha1"
	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// TestEndpointURLRewrite: an agent that cannot use the URLs kcp lists in
// the endpoint slice reaches the shards through --endpoint-url-rewrite.
// Here every shard's virtual workspace is reached through a TCP proxy of
// the test (TLS passes through it), and the proxy sees the agent's
// connections while the agent syncs. Rewritten to an address nothing
// listens on, the endpoint is unreachable: the PublishedResource says so
// and the agent keeps running.
func TestEndpointURLRewrite(t *testing.T) {
	t.Parallel()
	f := framework.NewFixture(t, testKcp)
	ctx := t.Context()
	f.Service.InstallCRD(t, framework.TestCRD("example.com", "Thing", "v1"))
	framework.Must(t, f.Service.Client.Create(ctx, thingsPR()), "create PublishedResource things")
	exp, err := getExport(ctx, f.Org, f.Export.Name)
	framework.Must(t, err, "get export")
	consumer := f.Kcp.BindConsumer(t, f.Org, f.Export.Name, exp.Spec.PermissionClaims)

	// kcp lists an endpoint once a workspace binds the export.
	slice := &kcpapisv1alpha1.APIExportEndpointSlice{}
	framework.WaitFor(t, syncTimeout, "an endpoint in the endpoint slice", func(ctx context.Context) (bool, error) {
		err := f.Org.Client.Get(ctx, types.NamespacedName{Name: f.Export.Name}, slice)
		return err == nil && len(slice.Status.APIExportEndpoints) > 0, err
	})
	var proxied atomic.Int64
	var rewrites, unreachable []string
	for _, e := range slice.Status.APIExportEndpoints {
		u, err := url.Parse(e.URL)
		framework.Must(t, err, "parse %s", e.URL)
		proxy := startTCPProxy(t, u.Host, &proxied)
		rewrites = append(rewrites, "--endpoint-url-rewrite="+u.Scheme+"://"+u.Host+"="+u.Scheme+"://"+proxy)
		unreachable = append(unreachable, "--endpoint-url-rewrite="+u.Scheme+"://"+u.Host+"="+u.Scheme+"://"+closedAddress(t))
	}

	agent := framework.StartAgent(t, f.AgentArgs(rewrites...)...)
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionTrue, syncagentv1alpha1.ReasonRunning))
	// The binding was made before the agent published the type.
	framework.WaitFor(t, syncTimeout, "Things served in the consumer's workspace", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kcpThing.GroupVersion().WithKind(kcpThing.Kind + "List"))
		err := consumer.Client.List(ctx, list)
		return err == nil, ignoreNoMatch(err)
	})
	if err := fullSync(ctx, f.Service.Client, consumer, "through-the-proxy", syncTimeout); err != nil {
		t.Fatalf("no sync through the rewritten endpoint: %v", err)
	}
	if proxied.Load() == 0 {
		t.Fatal("the agent synced without a connection through the rewritten endpoint")
	}
	agent.Stop(30 * time.Second)

	broken := framework.StartAgent(t, f.AgentArgs(unreachable...)...)
	f.Service.WaitForPublishedResource(t, "things", syncTimeout, "SyncReady False, EndpointUnreachable",
		framework.HasCondition(syncagentv1alpha1.ConditionSyncReady, metav1.ConditionFalse, syncagentv1alpha1.ReasonEndpointUnreachable))
	if broken.Exited() {
		t.Fatalf("the agent exited on an unreachable endpoint (code %d); log: %s", broken.ExitCode(), broken.LogPath)
	}
}

// startTCPProxy forwards connections on a new 127.0.0.1 port to target,
// counting them, until the test ends; it returns the port's address.
func startTCPProxy(t *testing.T, target string, count *atomic.Int64) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	framework.Must(t, err, "listen")
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			count.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer in.Close()
				out, err := net.DialTimeout("tcp", target, 10*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
				go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
				// One direction ends (or the test does): close both.
				select {
				case <-done:
				case <-t.Context().Done():
				}
			}()
		}
	}()
	return l.Addr().String()
}

// closedAddress is a 127.0.0.1 address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	framework.Must(t, err, "listen")
	addr := l.Addr().String()
	framework.Must(t, l.Close(), "close")
	return addr
}
