package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

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
// token is checked against kcp (it must reach the same workspace, with
// the access the agent needs to resolve it) and then used by every kcp
// client. A file that does not parse, points elsewhere, changes the server
// or TLS settings (those need a restart), or whose credentials kcp
// refuses, is rejected: the agent goes on with the kubeconfig it has, and
// says so (log, metric, Event).
type reloader struct {
	path string
	// load parses the file as the agent does at start.
	load func() (*rest.Config, error)
	// check resolves the workspace with cfg and returns its logical
	// cluster name.
	check func(ctx context.Context, cfg *rest.Config) (string, error)
	// current is the config in use (without its token), cluster its
	// workspace, token the live token.
	current *rest.Config
	cluster string
	token   *liveToken
	log     logr.Logger
	// event records an Event about the reload (on the PublishedResources).
	event func(eventType, reason, message string)

	last []byte // the content last applied or rejected
}

// Event reasons of reloads.
const (
	ReasonKubeconfigReloaded     = "KcpKubeconfigReloaded"
	ReasonKubeconfigReloadFailed = "KcpKubeconfigReloadFailed"
)

// run polls the file until ctx ends.
func (r *reloader) run(ctx context.Context) {
	r.last, _ = os.ReadFile(r.path)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		content, err := os.ReadFile(r.path)
		if err != nil || bytes.Equal(content, r.last) {
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
		r.last = content
		r.apply(ctx, fmt.Sprintf("%x", sha256.Sum256(content))[:12])
	}, kubeconfigPollInterval)
}

// errNeedsRestart: a change the running clients cannot take.
var errNeedsRestart = errors.New("only a new token is applied while the agent runs; restart the agent to use a new server URL or TLS settings")

// apply checks the file's new content and uses its token, or rejects it.
func (r *reloader) apply(ctx context.Context, version string) {
	err := r.applyErr(ctx)
	switch {
	case errors.Is(err, errUnchanged):
		return
	case err != nil:
		metrics.KubeconfigReloads.WithLabelValues("failure").Inc()
		metrics.KubeconfigReloadFailed.Set(1)
		r.log.Error(err, "The changed kcp kubeconfig was rejected; the agent goes on with the one it has", "path", r.path, "version", version)
		r.event("Warning", ReasonKubeconfigReloadFailed, fmt.Sprintf("The changed kcp kubeconfig (version %s) was rejected and the agent goes on with the one it has: %v", version, err))
		return
	}
	metrics.KubeconfigReloads.WithLabelValues("success").Inc()
	metrics.KubeconfigReloadFailed.Set(0)
	r.log.Info("Reloaded the kcp kubeconfig: its new token is in use", "path", r.path, "version", version)
	r.event("Normal", ReasonKubeconfigReloaded, fmt.Sprintf("The changed kcp kubeconfig (version %s) is in use.", version))
}

// errUnchanged: the file changed but not in anything the agent uses.
var errUnchanged = errors.New("unchanged")

func (r *reloader) applyErr(ctx context.Context) error {
	next, err := r.load()
	if err != nil {
		return err
	}
	if r.token == nil {
		return fmt.Errorf("%w (the agent started without a bearer token)", errNeedsRestart)
	}
	if err := sameConnection(r.current, next); err != nil {
		return err
	}
	if next.BearerToken == "" || next.BearerTokenFile != "" {
		return fmt.Errorf("%w (the new file has no bearer token)", errNeedsRestart)
	}
	if next.BearerToken == r.token.get() {
		metrics.KubeconfigReloadFailed.Set(0)
		return errUnchanged
	}
	ctx, cancel := context.WithTimeout(ctx, kubeconfigCheckTimeout)
	defer cancel()
	cluster, err := r.check(ctx, next)
	if err != nil {
		return fmt.Errorf("the new credentials do not reach the workspace: %w", err)
	}
	if cluster != r.cluster {
		return fmt.Errorf("the new kubeconfig points to workspace %s, not %s", cluster, r.cluster)
	}
	r.token.set(next.BearerToken)
	return nil
}

// sameConnection reports an error if next differs from cur in anything but
// its credentials' token.
func sameConnection(cur, next *rest.Config) error {
	a, b := cur.TLSClientConfig, next.TLSClientConfig
	switch {
	case cur.Host != next.Host:
		return fmt.Errorf("%w (the server URL changed from %s to %s)", errNeedsRestart, cur.Host, next.Host)
	case a.Insecure != b.Insecure || a.ServerName != b.ServerName || a.CAFile != b.CAFile || !bytes.Equal(a.CAData, b.CAData) ||
		a.CertFile != b.CertFile || !bytes.Equal(a.CertData, b.CertData) || a.KeyFile != b.KeyFile || !bytes.Equal(a.KeyData, b.KeyData):
		return fmt.Errorf("%w (the TLS settings changed)", errNeedsRestart)
	}
	return nil
}
