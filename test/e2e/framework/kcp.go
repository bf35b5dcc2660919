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

package framework

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
)

// Static tokens of the kcp test server. The admin is a member of
// system:kcp:admin; the agent user has no permissions except those the
// fixtures grant (contract §8.2).
const (
	adminToken = "e2e-admin-token"
	agentToken = "e2e-agent-token"
	// AgentUser is the kcp user name of the agent.
	AgentUser = "e2e-syncagent"
	// SecondAgentUser has its own token (SecondAgentConfig), for tests that
	// rotate the agent's credentials; it has no permissions until granted.
	SecondAgentUser  = "e2e-syncagent-2"
	secondAgentToken = "e2e-agent-token-2"
)

// kcpStartTimeout bounds the start of kcp (cold: ~30 s on 2 cores).
const kcpStartTimeout = 3 * time.Minute

// Kcp is a running kcp server.
type Kcp struct {
	// BaseURL is https://127.0.0.1:<port>.
	BaseURL string
	// CAData is the CA of the serving certificate.
	CAData []byte

	// procs are the processes (shards, front-proxy), started in order.
	procs []*Process
	// shard places workspaces that CreateWorkspace creates; empty lets
	// kcp choose.
	shard string
	// shardURLs are the shards' base URLs by name (StartShardedKcp).
	shardURLs map[string]string
}

// StartKcp starts kcp with its state in dir and its log in logDir, and
// extraArgs after its own flags. Every listener (API, embedded etcd client
// and peer) is bound to 127.0.0.1.
func StartKcp(ctx context.Context, bin, dir, logDir string, extraArgs ...string) (*Kcp, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	etcdClient, err := FreePort()
	if err != nil {
		return nil, err
	}
	etcdPeer, err := FreePort()
	if err != nil {
		return nil, err
	}

	tokens := filepath.Join(dir, "tokens.csv")
	content := fmt.Sprintf("%s,e2e-admin,e2e-admin,\"system:kcp:admin\"\n%s,%s,%s,\"\"\n%s,%s,%s,\"\"\n",
		adminToken, agentToken, AgentUser, AgentUser, secondAgentToken, SecondAgentUser, SecondAgentUser)
	if err := os.WriteFile(tokens, []byte(content), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write token file: %w", err)
	}

	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	root := filepath.Join(dir, "root")
	args := []string{
		"start",
		"--root-directory=" + root,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--shard-base-url=" + base,
		"--shard-external-url=" + base,
		fmt.Sprintf("--embedded-etcd-client-port=%d", etcdClient),
		fmt.Sprintf("--embedded-etcd-peer-port=%d", etcdPeer),
		"--token-auth-file=" + tokens,
	}
	versioned, err := versionedKcpArgs(ctx, bin)
	if err != nil {
		return nil, err
	}
	args = append(args, versioned...)
	args = append(args, extraArgs...)
	proc, err := StartProcess("kcp", bin, filepath.Join(logDir, "kcp.log"), args, nil)
	if err != nil {
		return nil, err
	}
	k := &Kcp{BaseURL: base, procs: []*Process{proc}}

	deadline := time.Now().Add(kcpStartTimeout)
	for {
		if proc.Exited() {
			return nil, fmt.Errorf("kcp exited during start-up, see %s", proc.LogPath)
		}
		if k.CAData == nil {
			k.CAData, _ = os.ReadFile(filepath.Join(root, "apiserver.crt"))
		}
		if k.CAData != nil && k.ready(ctx) {
			return k, nil
		}
		if time.Now().After(deadline) {
			proc.Stop(10 * time.Second)
			return nil, fmt.Errorf("kcp did not become ready within %v, see %s", kcpStartTimeout, proc.LogPath)
		}
		select {
		case <-ctx.Done():
			proc.Stop(10 * time.Second)
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (k *Kcp) ready(ctx context.Context) bool {
	if !k.readyz(ctx, k.BaseURL) {
		return false
	}
	// /readyz turns green slightly before the root workspace is usable.
	c, err := ctrlruntimeclient.New(k.AdminConfig("root"), ctrlruntimeclient.Options{Scheme: Scheme()})
	if err != nil {
		return false
	}
	return kcp.Ping(ctx, c) == nil
}

// readyz reports whether the server at base answers /readyz with 200 (as
// the admin, verified with kcp's CA).
func (k *Kcp) readyz(ctx context.Context, base string) bool {
	rt, err := rest.TransportFor(&rest.Config{BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAData: k.CAData}})
	if err != nil {
		return false
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	resp, err := (&http.Client{Transport: rt, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop stops kcp, its processes in reverse start order.
func (k *Kcp) Stop() {
	for i := len(k.procs) - 1; i >= 0; i-- {
		k.procs[i].Stop(20 * time.Second)
	}
}

// LogPath is the path of kcp's log.
func (k *Kcp) LogPath() string { return k.procs[0].LogPath }

// AdminConfig returns an admin config for a workspace (path or cluster name).
func (k *Kcp) AdminConfig(workspace string) *rest.Config {
	return k.config(workspace, adminToken)
}

// AgentConfig returns the agent user's config for a workspace.
func (k *Kcp) AgentConfig(workspace string) *rest.Config {
	return k.config(workspace, agentToken)
}

// SecondAgentConfig returns SecondAgentUser's config for a workspace.
func (k *Kcp) SecondAgentConfig(workspace string) *rest.Config {
	return k.config(workspace, secondAgentToken)
}

func (k *Kcp) config(workspace, token string) *rest.Config {
	return &rest.Config{
		Host:            k.BaseURL + "/clusters/" + workspace,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: k.CAData},
		QPS:             100,
		Burst:           200,
	}
}

// AdminClient returns an admin client for a workspace.
func (k *Kcp) AdminClient(workspace string) (ctrlruntimeclient.Client, error) {
	return ctrlruntimeclient.New(k.AdminConfig(workspace), ctrlruntimeclient.Options{Scheme: Scheme()})
}
