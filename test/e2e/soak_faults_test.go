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

//go:build e2e && soak

package e2e

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// soakExpectedErrors are the ERROR lines a replica may log because of what
// the soak does on purpose, each only within the windows of its cause (a
// shard stopped until soakRecovery after its restart; a workspace unbound
// until soakRecovery after it is bound again). Anything else fails the soak.
var soakExpectedErrors = []struct {
	cause   string
	pattern *regexp.Regexp
}{
	// The shard is down: watches, Event writes and requests to its virtual
	// workspace fail (client-go's reflectors and event recorders log at
	// ERROR) or are cut. After its restart, its virtual workspace answers
	// "API export not found" and refuses with "access denied" until its
	// caches have the APIExport and the permissions again, and refuses
	// Event patches that carry the claim label kcp put on them; until
	// its virtual workspace serves the export's types again, requests
	// for them (Events included) get a 404 that names no object, and a
	// workspace cache's informer of a type may not sync within a pass.
	// A virtual workspace's authorization request to the other shard can
	// be reset by it while the restarted shard catches up (seen once in CI:
	// "error authorizing RBAC in API export … stream error … INTERNAL_ERROR;
	// received from peer"), which fails a watch.
	// A request the stopping shard took but did not answer comes back as
	// kcp's timeout (seen in a 30-minute run: "failed to add the
	// finalizer: the server was unable to return a response in the time
	// allotted"), and a wildcard watch of the endpoint's cache is cut off
	// when its connection is made again ("Failed to watch … context
	// canceled"). A request in flight on the front-proxy's connection to
	// the stopping or starting shard can be reset the same way (seen in a
	// 30-minute run: "failed to add the finalizer: Get … stream error …
	// INTERNAL_ERROR; received from peer"), and while the restarted
	// virtual workspace does not serve the types yet, the client's REST
	// mapper finds no kind for them (seen in a 30-minute run: "failed to
	// update the status in kcp: no matches for kind \"Gadget\""). The
	// discovery of a stopped or starting shard's virtual workspace may
	// get an answer without a readable message ("unknown"), which fails
	// the release of a deselected PublishedResource until the shard is
	// back (seen in a 30-minute run), and a status update whose client
	// asks the shard's discovery ("failed to get server groups: unknown",
	// seen in a 30-minute run).
	{causeShard, regexp.MustCompile(`connect: connection refused|stream error: stream ID \d+; INTERNAL_ERROR; received from peer|no matches for kind \\"\w+\\" in version|http2: server sent GOAWAY|http2: client connection lost|unexpected EOF|API export not found|access denied|claimed\.internal\.apis\.kcp\.io/[^:]*: Forbidden: must not be set|the server could not find the requested resource|failed waiting for \*v1\.\w+ Informer to sync|malformed header: missing HTTP content-type|the server was unable to return a response in the time allotted|Failed to watch\t.*/clusters/%2A/.*context canceled"\}$|Failed to release the objects of a PublishedResource this agent no longer selects\t.*failed to discover the endpoint's API groups \(\w*\): unknown"\}$|failed to update the status in kcp: failed to get server groups: unknown"\}$`)},
	// The workspace is unbound: its claims are gone (Events may not be
	// written), the bound resources are no longer served, and passes of
	// its objects still queued are denied by the virtual workspace.
	{causeUnbind, regexp.MustCompile(`cannot (create|patch) resource \\"events\\"|the server could not find the requested resource|access denied`)},
	// A widget is placed in ObjectConflict before widgets is deleted: its
	// passes fail, and controller-runtime logs each at ERROR.
	{causeConflict, regexp.MustCompile(`Reconciler error\t\{"publishedresource": "widgets", .*"request": \{"name":"conflict-\d+"[^}]*\}.*"error": "[^"]*the local object belongs to someone else: Widget [^"]*-conflict-\d+"\}$`)},
	// A leader stops (SIGTERM, or SIGCONT after it lost the lease):
	// controller-runtime reports the end of leading at ERROR although it
	// is the expected outcome.
	// A controller stops (a PublishedResource disabled, changed or
	// deleted, the lead lost) while a response is read: client-go logs
	// the cut-off read at ERROR; a replica shutting down logs its cut
	// watches and the Events its broadcaster can no longer send, and its
	// elector the Lease read or update its stop cut off (before the
	// request, in its rate limiter, or in flight: "Put …: context
	// canceled", seen in CI); a watch cut off in flight says "Get …:
	// context canceled" (seen in a 30-minute run). The elector of a
	// stopping replica whose Lease another replica updated meanwhile
	// cannot release it (seen in a 30-minute run: "Failed to release
	// lock: … the object has been modified").
	{causeStop, regexp.MustCompile(`error received after stop sequence was engaged\t\{"error": "leader election lost"\}|error retrieving resource lock [^ ]*: .*context canceled$|Unexpected error when reading response body\t.*"error": "context canceled"\}$|Unable to write event \(broadcaster is shut down\)|Failed to watch\t.*"error": "(client rate limiter Wait returned an error: |Get \\"[^"]*\\": )context canceled"\}$|Failed to release lock: Operation cannot be fulfilled on leases\.coordination\.k8s\.io "[^"]*": the object has been modified|Failed to update lock optimistically: .*context canceled, falling back to slow path$`)},
	// The service kube-apiserver restarts: requests fail or are cut (a
	// request written into a connection the killed server closed fails
	// with a broken pipe), the leader cannot renew the Lease and stops
	// leading (client-go's elector also reports a renewal its rate limiter
	// would not start before the deadline).
	{causeService, regexp.MustCompile(`connect: connection refused|connection reset by peer|write: broken pipe|http2: server sent GOAWAY|http2: client connection lost|unexpected EOF|failed to renew lease|context deadline exceeded|would exceed context deadline|the server is currently unable to handle the request|refusing to write: the leader Lease is not renewed|error retrieving resource lock|Agent failed\t\{"error": "manager failed: leader election lost"\}`)},
	// A leader resumed after it lost the lease: its write fence refuses
	// the writes of the passes it had in hand (quietly: requeued) until it
	// exits; client-go's elector finds its request deadline passed, before
	// the request or while it read the answer.
	{causePaused, regexp.MustCompile(`refusing to write: the leader Lease is not renewed|error retrieving resource lock|would exceed context deadline|Unexpected error when reading response body\t\{"error": "context deadline exceeded"\}$|Agent failed\t\{"error": "manager failed: leader election lost"\}`)},
}

const (
	causeShard  = "shard stopped and restarted"
	causeUnbind = "workspace unbound"
	// causeConflict: see placeConflict.
	causeConflict = "widget in ObjectConflict"
	causeStop     = "replica stopped"
	causePaused   = "leader paused beyond its lease"
	causeService  = "service kube-apiserver restarted"
	// soakRecovery and soakServiceRecovery: see recovery.
	soakRecovery        = 75 * time.Second
	soakServiceRecovery = 25 * time.Second
)

// recovery is how long after a fault's end its errors may still be logged:
// the agent reconnects to a kcp endpoint with a backoff of up to a minute;
// the service cluster's clients retry within seconds.
func recovery(cause string) time.Duration {
	if cause == causeService {
		return soakServiceRecovery
	}
	return soakRecovery
}

// faultWindows records when each cause of expected errors was active.
type faultWindows struct {
	mu      sync.Mutex
	windows map[string][][2]time.Time
	// shard is held by the shard fault while the second shard is down
	// and by the administrator while it creates a workspace.
	shard sync.RWMutex
}

// begin records the start of a cause and returns the function that ends it.
func (f *faultWindows) begin(cause string) (end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.windows == nil {
		f.windows = map[string][][2]time.Time{}
	}
	f.windows[cause] = append(f.windows[cause], [2]time.Time{time.Now()})
	i := len(f.windows[cause]) - 1
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.windows[cause][i][1] = time.Now().Add(recovery(cause))
	}
}

func (f *faultWindows) active(cause string, at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.windows[cause] {
		if !at.Before(w[0]) && (w[1].IsZero() || at.Before(w[1])) {
			return true
		}
	}
	return false
}

// noUnexpectedErrors fails the test if a replica logged an ERROR line that
// no fault of the soak explains; the explained ones are counted in the log.
func noUnexpectedErrors(t *testing.T, a *framework.Agent, faults *faultWindows, log *opLog) {
	t.Helper()
	counts := map[string]int{}
	var unexpected []string
lines:
	for _, l := range a.ErrorLines() {
		at, err := time.Parse(time.RFC3339Nano, strings.SplitN(l, "\t", 2)[0])
		for _, e := range soakExpectedErrors {
			if err == nil && e.pattern.MatchString(l) && faults.active(e.cause, at) {
				counts[e.cause]++
				continue lines
			}
		}
		unexpected = append(unexpected, l)
	}
	for _, cause := range slices.Sorted(maps.Keys(counts)) {
		log.add("expected-errors %s: %d line(s) in %s", cause, counts[cause], filepath.Base(a.LogPath))
	}
	if len(unexpected) > 0 {
		t.Errorf("a replica logged %d unexpected ERROR line(s), the first: %s", len(unexpected), unexpected[0])
	}
}
