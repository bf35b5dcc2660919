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
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kcp-syncagent/api-syncagent/internal/backoff"
	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
	"github.com/kcp-syncagent/api-syncagent/internal/metrics"
)

// The kcp kubeconfig is a file, usually a Secret volume whose content the
// kubelet swaps behind a symlink. It is read every kubeconfigPollInterval
// (a poll sees a symlink swap, an edit in place and a re-created file
// alike); a change is applied once the content has stayed the same for
// kubeconfigSettle, and checked against kcp within kubeconfigCheckTimeout.
const (
	kubeconfigPollInterval = 2 * time.Second
	kubeconfigSettle       = time.Second
	kubeconfigCheckTimeout = 30 * time.Second
)

// liveToken holds the bearer token of the kcp kubeconfig in use. Every kcp
// client (they all derive from one rest.Config) sends it, so a rotated
// token takes effect on the next request without rebuilding any client.
type liveToken struct {
	mu    sync.RWMutex
	token string
}

// useLiveToken moves cfg's bearer token into a liveToken whose transport
// wrapper sends it; nil if cfg authenticates otherwise (a token file,
// which client-go re-reads itself, or a client certificate).
func useLiveToken(cfg *rest.Config) *liveToken {
	if cfg.BearerToken == "" || cfg.BearerTokenFile != "" {
		return nil
	}
	t := &liveToken{token: cfg.BearerToken}
	cfg.BearerToken = ""
	cfg.Wrap(t.wrap)
	return t
}

func (t *liveToken) get() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.token
}

func (t *liveToken) set(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.token = token
}

func (t *liveToken) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.get())
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// reloader applies a changed kcp kubeconfig while the agent runs: a new
// token is checked against kcp (it must resolve the same workspace and
// may read the export's virtual workspace) and then used by every kcp
// client. A file that does not parse, points elsewhere, changes anything
// but the token (server URL, TLS settings, impersonation: those need a
// restart), or whose credentials kcp refuses, is rejected: the agent goes
// on with the kubeconfig it has, and says so (log, metric, Event). A
// check that could not reach kcp is tried again with backoff.
type reloader struct {
	path string
	// load parses the file's content as the agent does at start.
	load func(content []byte) (*rest.Config, error)
	// check resolves the workspace with cfg: its logical cluster name, and
	// the user kcp knows the token as ("" if kcp does not say); an error
	// wrapping errDenied is a definite no.
	check func(ctx context.Context, cfg *rest.Config) (cluster, user string, err error)
	// current is the config in use (without its token), cluster its
	// workspace, token the live token.
	current *rest.Config
	cluster string
	token   *liveToken
	log     logr.Logger
	// event records an Event about the reload (on the PublishedResources).
	event func(eventType, reason, message string)

	// done is the content last applied or rejected for good (nil at the
	// start: the first poll compares the file with the token in use).
	done []byte
	// failed is the content whose check last failed, retryAt when it is
	// checked again, failures how often in a row.
	failed   []byte
	retryAt  time.Time
	failures int
	now      func() time.Time
}

// Event reasons of reloads.
const (
	ReasonKubeconfigReloaded     = "KcpKubeconfigReloaded"
	ReasonKubeconfigReloadFailed = "KcpKubeconfigReloadFailed"
)

// A check that could not reach kcp is tried again after kubeconfigRetryMin,
// doubling up to kubeconfigRetryMax.
const (
	kubeconfigRetryMin = 5 * time.Second
	kubeconfigRetryMax = time.Minute
)

// errDenied marks a check kcp answered with a no.
var errDenied = errors.New("denied")

// run polls the file until ctx ends.
func (r *reloader) run(ctx context.Context) {
	if r.now == nil {
		r.now = time.Now
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		content, err := os.ReadFile(r.path)
		if err != nil || bytes.Equal(content, r.done) {
			return // a file being swapped; the next poll sees the result
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(kubeconfigSettle):
		}
		if again, err := os.ReadFile(r.path); err != nil || !bytes.Equal(again, content) {
			return // still changing
		}
		r.poll(ctx, content)
	}, kubeconfigPollInterval)
}

// poll handles content that differs from what was last applied.
func (r *reloader) poll(ctx context.Context, content []byte) {
	if bytes.Equal(content, r.failed) && r.now().Before(r.retryAt) {
		return
	}
	version := fmt.Sprintf("%x", sha256.Sum256(content))[:12]
	user, err := r.applyErr(ctx, content)
	switch {
	case errors.Is(err, errUnchanged):
		r.done, r.failed = content, nil
		metrics.KubeconfigReloadFailed.Set(0)
		return
	case err == nil:
		r.done, r.failed = content, nil
		metrics.KubeconfigReloads.WithLabelValues("success").Inc()
		metrics.KubeconfigReloadFailed.Set(0)
		r.log.Info("Reloaded the kcp kubeconfig: its new token is in use", "path", r.path, "version", version, "user", user)
		r.event("Normal", ReasonKubeconfigReloaded, fmt.Sprintf("The changed kcp kubeconfig (version %s, user %q) is in use.", version, user))
		return
	}
	definite := !errors.Is(err, errUnreachable)
	first := !bytes.Equal(content, r.failed)
	if first {
		r.failures = 0
	}
	r.failures++
	if definite {
		r.done, r.failed = content, nil
	} else {
		r.failed = content
		r.retryAt = r.now().Add(backoff.Exponential(kubeconfigRetryMin, kubeconfigRetryMax, r.failures-1))
	}
	if !first && !definite {
		r.log.V(1).Info("The changed kcp kubeconfig still cannot be checked", "version", version, "error", err.Error())
		return
	}
	metrics.KubeconfigReloads.WithLabelValues("failure").Inc()
	metrics.KubeconfigReloadFailed.Set(1)
	msg := "The changed kcp kubeconfig was rejected; the agent goes on with the one it has"
	if !definite {
		msg = "The changed kcp kubeconfig cannot be checked against kcp; the agent goes on with the one it has and tries again"
	}
	r.log.Error(err, msg, "path", r.path, "version", version)
	r.event("Warning", ReasonKubeconfigReloadFailed, fmt.Sprintf("%s (version %s): %v", msg, version, err))
}

// errNeedsRestart: a change the running clients cannot take.
var errNeedsRestart = errors.New("only a new token is applied while the agent runs; restart the agent to use a new server URL, TLS settings or identity settings")

// errUnchanged: the file changed but not in anything the agent uses.
var errUnchanged = errors.New("unchanged")

// errUnreachable: the check did not get an answer from kcp.
var errUnreachable = errors.New("kcp could not be asked")

// applyErr checks content and uses its token; it returns the user kcp
// knows the new token as.
func (r *reloader) applyErr(ctx context.Context, content []byte) (string, error) {
	next, err := r.load(content)
	if err != nil {
		return "", err
	}
	if r.token == nil {
		return "", fmt.Errorf("%w (the agent started without a bearer token)", errNeedsRestart)
	}
	if err := sameConnection(r.current, next); err != nil {
		return "", err
	}
	if next.BearerToken == "" || next.BearerTokenFile != "" {
		return "", fmt.Errorf("%w (the new file has no bearer token)", errNeedsRestart)
	}
	if next.BearerToken == r.token.get() {
		return "", errUnchanged
	}
	ctx, cancel := context.WithTimeout(ctx, kubeconfigCheckTimeout)
	defer cancel()
	cluster, user, err := r.check(ctx, next)
	switch {
	case errors.Is(err, errDenied):
		return "", fmt.Errorf("the new credentials do not reach the workspace: %w", err)
	case err != nil:
		return "", fmt.Errorf("%w: %w", errUnreachable, err)
	case cluster != r.cluster:
		return "", fmt.Errorf("the new kubeconfig points to workspace %s, not %s", cluster, r.cluster)
	}
	r.token.set(next.BearerToken)
	return user, nil
}

// sameConnection reports an error if next differs from cur in anything but
// its bearer token.
func sameConnection(cur, next *rest.Config) error {
	a, b := cur.TLSClientConfig, next.TLSClientConfig
	switch {
	case cur.Host != next.Host:
		return fmt.Errorf("%w (the server URL changed from %s to %s)", errNeedsRestart, cur.Host, next.Host)
	case a.Insecure != b.Insecure || a.ServerName != b.ServerName || a.CAFile != b.CAFile || !bytes.Equal(a.CAData, b.CAData) ||
		a.CertFile != b.CertFile || !bytes.Equal(a.CertData, b.CertData) || a.KeyFile != b.KeyFile || !bytes.Equal(a.KeyData, b.KeyData):
		return fmt.Errorf("%w (the TLS settings changed)", errNeedsRestart)
	case !reflect.DeepEqual(cur.Impersonate, next.Impersonate) || cur.Username != next.Username || cur.Password != next.Password ||
		!reflect.DeepEqual(cur.ExecProvider, next.ExecProvider) || !reflect.DeepEqual(cur.AuthProvider, next.AuthProvider) ||
		(cur.Proxy == nil) != (next.Proxy == nil):
		return fmt.Errorf("%w (the identity or proxy settings changed)", errNeedsRestart)
	}
	return nil
}

// checkKcpToken is the reloader's check of a new kcp config: it resolves
// the workspace (and export) as the agent does at start, asks kcp whether
// the token may list the export's virtual workspace content (what the
// sync needs most), and asks whom kcp knows the token as. A refusal
// (401, 403, a denied review) wraps errDenied; other errors are kcp not
// answering.
func checkKcpToken(ctx context.Context, cfg *rest.Config, ref kcp.Ref) (cluster, user string, err error) {
	denied := func(err error) error {
		if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
			return fmt.Errorf("%w: %w", errDenied, err)
		}
		return err
	}
	t, err := kcp.ResolveOnce(ctx, cfg, ref)
	if err != nil {
		return "", "", denied(err)
	}
	cs, err := kubernetes.NewForConfig(t.APIExportConfig)
	if err != nil {
		return "", "", err
	}
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: "apis.kcp.io", Resource: "apiexports", Subresource: "content", Name: t.APIExportName, Verb: "list",
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", "", denied(err)
	}
	if !review.Status.Allowed {
		return "", "", fmt.Errorf("%w: the new token may not list the content of APIExport %s", errDenied, t.APIExportName)
	}
	// Whom the token belongs to, for the log and the Event (kcp may not say).
	if ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
		user = ssr.Status.UserInfo.Username
	}
	return t.Workspace.Name, user, nil
}
