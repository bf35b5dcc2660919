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

package app

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/options"
)

// serviceConfig loads the service cluster config in controller-runtime's
// order (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config) and applies
// the host and CA overrides and the rate limits.
func serviceConfig(o *options.Options) (*rest.Config, error) {
	var (
		cfg *rest.Config
		err error
	)
	switch {
	case o.KubeconfigFile != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", o.KubeconfigFile)
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	default:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			cfg, err = clientcmd.BuildConfigFromFlags("", clientcmd.RecommendedHomeFile)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("failed to load the service cluster kubeconfig: %w", err)
	}

	if o.KubeconfigHostOverride != "" {
		cfg.Host = o.KubeconfigHostOverride
	}
	if o.KubeconfigCAFileOverride != "" {
		cfg.CAData = nil
		cfg.CAFile = o.KubeconfigCAFileOverride
	}
	limit(cfg, o.ServiceQPS, o.ServiceBurst)
	return cfg, nil
}

// kcpConfig loads the kcp kubeconfig and checks that it points into a
// workspace (a /clusters/<workspace> URL).
func kcpConfig(o *options.Options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.KcpKubeconfigFile)
	if err != nil {
		return nil, fmt.Errorf("failed to load --kcp-kubeconfig %q: %w", o.KcpKubeconfigFile, err)
	}
	return kcpConfigChecked(o, cfg)
}

// kcpConfigFrom is kcpConfig for the kubeconfig's content (a reload: the
// bytes that were read, not the file again).
func kcpConfigFrom(o *options.Options, content []byte) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(content)
	if err != nil {
		return nil, fmt.Errorf("failed to load --kcp-kubeconfig %q: %w", o.KcpKubeconfigFile, err)
	}
	return kcpConfigChecked(o, cfg)
}

func kcpConfigChecked(o *options.Options, cfg *rest.Config) (*rest.Config, error) {
	if _, err := kcp.ClusterFromURL(cfg.Host); err != nil {
		return nil, fmt.Errorf("--kcp-kubeconfig %q must point to a workspace (a server URL with /clusters/<workspace>): %w", o.KcpKubeconfigFile, err)
	}
	limit(cfg, o.KcpQPS, o.KcpBurst)
	return cfg, nil
}

// limit gives cfg one rate limiter that every client made from it (or from
// a copy) shares: --kcp-qps and --service-qps bound the agent's requests to
// a side, not those of each client (the kcp provider makes clients per
// workspace, which would multiply the limit by the number of workspaces).
func limit(cfg *rest.Config, qps float32, burst int) {
	cfg.QPS, cfg.Burst = qps, burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
}

// ownLimiter is a copy of cfg with a rate limiter of its own at the same
// rate: a Lease's renewals never wait behind the sync's requests in the
// limiter the agent's clients share.
func ownLimiter(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	limit(cfg, cfg.QPS, cfg.Burst)
	return cfg
}
