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
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// replicaSet is an agent's replicas with leader election: two, or size.
type replicaSet struct {
	t      *testing.T
	args   []string
	size   int // 0: two
	mu     sync.Mutex
	agents []*framework.Agent
	// all are every replica started, stopped ones too: their logs are
	// checked as well.
	all   []*framework.Agent
	pprof map[*framework.Agent]string // the /debug/pprof address of each
}

// dumpGoroutines writes a replica's goroutine stacks to the artifacts.
func (r *replicaSet) dumpGoroutines(a *framework.Agent, name string) {
	r.mu.Lock()
	addr := r.pprof[a]
	r.mu.Unlock()
	_, body, err := framework.Get(r.t.Context(), "http://"+addr+"/debug/pprof/goroutine?debug=1")
	if err != nil {
		r.t.Logf("failed to read the goroutines of a replica: %v", err)
		return
	}
	framework.WriteFile(r.t, name, []byte(body))
}

// The kinds of fault. Faults are dealt from a deck that holds each kind
// once, shuffled by the seed: each deck of five faults (six with
// partitions: faultMove) covers every kind.
const (
	faultKill = iota
	faultTerm
	faultPause
	faultShard
	faultService
	faultKinds
	// faultMove (partitions only): see soakPartitions.move.
	faultMove = faultKinds
)

// fault injects one fault of a kind and heals it: SIGKILL or SIGTERM of a random
// replica (a new one starts 2–5 s later), SIGSTOP of the leader for longer
// than its lease (then SIGCONT: it must step down; if it exits, a new
// replica starts), the second kcp shard stopped for 5–20 s, or the service
// kube-apiserver killed and started again 3–10 s later (replicas that
// lost the lease and exited are replaced when it is back).
func (r *replicaSet) fault(kind int, rnd *rand.Rand, k *framework.Kcp, svc *framework.ServiceCluster, faults *faultWindows, log *opLog) {
	switch kind {
	case faultKill, faultTerm:
		r.mu.Lock()
		i := rnd.IntN(len(r.agents))
		victim := r.agents[i]
		r.agents = slices.Delete(r.agents, i, i+1)
		r.mu.Unlock()
		leader := isLeader(r.t, victim)
		if kind == faultKill {
			log.add("fault-sigkill replica leader=%v", leader)
			victim.Kill()
		} else {
			log.add("fault-sigterm replica leader=%v", leader)
			victim.Stop(30 * time.Second)
		}
		time.Sleep(time.Duration(2+rnd.IntN(4)) * time.Second)
		r.start(log)
	case faultPause:
		pause := soakLease + time.Duration(5+rnd.IntN(10))*time.Second
		r.mu.Lock()
		agents := slices.Clone(r.agents)
		r.mu.Unlock()
		var victim *framework.Agent
		for _, a := range agents {
			if isLeader(r.t, a) {
				victim = a
			}
		}
		if victim == nil {
			log.add("fault-sigstop-leader: no leader to stop")
			return
		}
		log.add("fault-sigstop-leader for %s", pause)
		defer faults.begin(causePaused)()
		_ = syscall.Kill(-victim.Pid(), syscall.SIGSTOP)
		time.Sleep(pause)
		_ = syscall.Kill(-victim.Pid(), syscall.SIGCONT)
		// It lost the lease: it must stop leading (the manager ends the
		// process); a replacement starts.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = victim.Wait(ctx)
		exited := victim.Exited()
		log.add("fault-sigcont-leader exited=%v code=%d", exited, victim.ExitCode())
		if exited {
			r.mu.Lock()
			r.agents = slices.DeleteFunc(r.agents, func(a *framework.Agent) bool { return a == victim })
			r.mu.Unlock()
			r.start(log)
		}
	case faultShard:
		down := time.Duration(5+rnd.IntN(16)) * time.Second
		log.add("fault-shard-stop %s for %s", framework.SecondShard, down)
		faults.shard.Lock()
		defer faults.shard.Unlock()
		end := faults.begin(causeShard)
		defer end()
		k.StopShard(r.t, framework.SecondShard)
		time.Sleep(down)
		k.StartShard(r.t, framework.SecondShard)
		log.add("fault-shard-started %s", framework.SecondShard)
	case faultService:
		down := time.Duration(3+rnd.IntN(8)) * time.Second
		log.add("fault-service-apiserver-kill for %s", down)
		defer faults.begin(causeService)()
		if err := svc.RestartAPIServer(context.Background(), down); err != nil {
			r.t.Errorf("restart the service kube-apiserver: %v", err)
			log.add("fault-service-apiserver-restart: error: %v", err)
			return
		}
		log.add("fault-service-apiserver-started")
		// The leader may still give up the Lease it could not renew and
		// exit: wait for that (or for a leader) before replacing replicas.
		r.awaitLeaderOrExit(soakLease + 15*time.Second)
		r.heal(log)
	}
}

// rotateToken writes the kcp kubeconfig with the other agent user's token
// and logs how many of the running replicas reloaded it within a minute
// (the old token stays valid: a replica that misses it, paused or
// starting, goes on with the old one).
func rotateToken(f *framework.Fixture, agents []*framework.Agent, second bool, log *opLog) {
	cfg, user := f.Kcp.AgentConfig(f.Org.Path), framework.AgentUser
	if second {
		cfg, user = f.Kcp.SecondAgentConfig(f.Org.Path), framework.SecondAgentUser
	}
	before := map[*framework.Agent]float64{}
	for _, a := range agents {
		before[a], _ = scrapeMetric(context.Background(), a, "sync_agent_kcp_kubeconfig_reloads_total", `result="success"`)
	}
	if err := framework.RewriteKubeconfig(f.KcpKubeconfig, cfg); err != nil {
		log.add("fault-token-rotate user=%s: error: %v", user, err)
		return
	}
	reloaded := 0
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		reloaded = 0
		for _, a := range agents {
			if n, err := scrapeMetric(context.Background(), a, "sync_agent_kcp_kubeconfig_reloads_total", `result="success"`); err == nil && n > before[a] {
				reloaded++
			}
		}
		if reloaded == len(agents) {
			break
		}
		time.Sleep(time.Second)
	}
	log.add("fault-token-rotate user=%s reloaded=%d/%d", user, reloaded, len(agents))
}

// running are the replicas started and not stopped by the soak.
func (r *replicaSet) running() []*framework.Agent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.agents)
}

// start starts a replica (log: nil before the run).
func (r *replicaSet) start(log *opLog) {
	pprof := framework.MustFreeAddress(r.t)
	a := framework.StartAgent(r.t, append(slices.Clone(r.args), "--pprof-address="+pprof)...)
	r.mu.Lock()
	r.agents = append(r.agents, a)
	r.all = append(r.all, a)
	r.pprof[a] = pprof
	r.mu.Unlock()
	if log != nil {
		log.add("replica-started")
	}
}

// awaitLeaderOrExit waits up to d until a live replica leads or one has
// exited.
func (r *replicaSet) awaitLeaderOrExit(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		agents := slices.Clone(r.agents)
		r.mu.Unlock()
		for _, a := range agents {
			if a.Exited() || isLeader(r.t, a) {
				return
			}
		}
		time.Sleep(time.Second)
	}
}

// heal makes sure every replica runs: exited ones are replaced.
func (r *replicaSet) heal(log *opLog) {
	r.mu.Lock()
	r.agents = slices.DeleteFunc(r.agents, func(a *framework.Agent) bool { return a.Exited() })
	missing := cmp.Or(r.size, 2) - len(r.agents)
	r.mu.Unlock()
	for range missing {
		r.start(log)
	}
}

// oneLeaderRunning checks that exactly one replica leads and runs one sync
// controller per PublishedResource, and that the standby runs none.
func (r *replicaSet) oneLeaderRunning(t *testing.T, controllers int) {
	t.Helper()
	framework.WaitFor(t, syncTimeout, "one leader with every sync controller", func(ctx context.Context) (bool, error) {
		leaders := 0
		r.mu.Lock()
		agents := slices.Clone(r.agents)
		r.mu.Unlock()
		for _, a := range agents {
			if a.Exited() {
				return false, fmt.Errorf("a replica exited with code %d", a.ExitCode())
			}
			want := 0.0
			if isLeader(t, a) {
				leaders++
				want = float64(controllers)
			}
			got, err := scrapeMetric(ctx, a, "sync_agent_sync_controllers")
			if err != nil {
				return false, err
			}
			if got != want {
				return false, fmt.Errorf("a replica (leader=%v) runs %v sync controllers, want %v", want > 0, got, want)
			}
		}
		if leaders != 1 {
			return false, fmt.Errorf("%d leaders", leaders)
		}
		return true, nil
	})
}

// leader returns the replica that leads.
func (r *replicaSet) leader(t *testing.T) *framework.Agent {
	t.Helper()
	r.mu.Lock()
	agents := slices.Clone(r.agents)
	r.mu.Unlock()
	for _, a := range agents {
		if isLeader(t, a) {
			return a
		}
	}
	t.Fatal("no replica leads")
	return nil
}

var leaderMetric = regexp.MustCompile(`(?m)^leader_election_master_status\{[^}]*\} 1$`)

// isLeader reports whether a replica says it holds the Lease.
func isLeader(t *testing.T, a *framework.Agent) bool {
	t.Helper()
	_, body, err := framework.Get(t.Context(), "http://"+a.MetricsAddress+"/metrics")
	return err == nil && leaderMetric.MatchString(body)
}
