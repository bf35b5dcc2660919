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

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kcp-syncagent/api-syncagent/test/e2e/framework"
)

// Sides of the agent's requests, told apart by the host label of
// rest_client_requests_total.
const (
	sideKcp     = "kcp"
	sideService = "service"
	sideOther   = "other"
)

// settle waits until the agent made no write request for settleQuiet
// (at most settleTimeout), so that a phase's trailing work is attributed
// to it.
const (
	settleQuiet    = 3 * time.Second
	settleTimeout  = time.Minute
	settleInterval = 500 * time.Millisecond
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// sample is one Prometheus sample.
type sample struct {
	labels map[string]string
	value  float64
}

// samples are the parsed samples of one scrape by metric name.
type samples map[string][]sample

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? ([0-9.eE+-]+|NaN|[+-]Inf)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseMetrics reads the Prometheus text format (comments skipped).
func parseMetrics(r io.Reader) samples {
	out := samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			l[p[1]] = p[2]
		}
		out[m[1]] = append(out[m[1]], sample{labels: l, value: v})
	}
	return out
}

// sum adds the samples of name whose labels contain match.
func (s samples) sum(name string, match map[string]string) float64 {
	var total float64
	for _, x := range s[name] {
		ok := true
		for k, v := range match {
			ok = ok && x.labels[k] == v
		}
		if ok {
			total += x.value
		}
	}
	return total
}

// maxBy returns the largest per-label-value sum of name.
func (s samples) maxBy(name, label string) float64 {
	by := map[string]float64{}
	for _, x := range s[name] {
		by[x.labels[label]] += x.value
	}
	var m float64
	for _, v := range by {
		m = max(m, v)
	}
	return m
}

func getLong(ctx context.Context, url string, timeout time.Duration) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// scrapeAgent reads the agent's /metrics.
func (e *env) scrapeAgent() samples {
	code, body, err := framework.Get(e.t.Context(), "http://"+e.agent.MetricsAddress+"/metrics")
	if err != nil || code != http.StatusOK {
		e.t.Fatalf("failed to scrape the agent's metrics (code %d): %v", code, err)
	}
	return parseMetrics(strings.NewReader(body))
}

func hostOf(u string) string {
	if !strings.Contains(u, "://") {
		u = "https://" + u
	}
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}

// sides maps the host label values of the agent's client metrics to sides.
func (e *env) sides() map[string]string {
	return map[string]string{hostOf(e.k.BaseURL): sideKcp, hostOf(e.svc.Config.Host): sideService}
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// requestDelta returns the agent's requests between two scrapes (before
// may be nil) by side and HTTP method.
func requestDelta(before, after samples, sides map[string]string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	add := func(s samples, sign float64) {
		for _, x := range s["rest_client_requests_total"] {
			side, ok := sides[x.labels["host"]]
			if !ok {
				side = sideOther
			}
			if out[side] == nil {
				out[side] = map[string]float64{}
			}
			out[side][x.labels["method"]] += sign * x.value
		}
	}
	add(after, 1)
	if before != nil {
		add(before, -1)
	}
	for side, methods := range out {
		for m, v := range methods {
			if v == 0 {
				delete(methods, m)
			}
		}
		if len(methods) == 0 {
			delete(out, side)
		}
	}
	return out
}

func perObject(m map[string]map[string]float64, n int) map[string]map[string]float64 {
	for _, methods := range m {
		for k := range methods {
			methods[k] /= float64(n)
		}
	}
	return m
}

func (e *env) writes() float64 {
	var w float64
	scrape := e.scrapeAgent()
	for _, methods := range requestDelta(nil, scrape, e.sides()) {
		for m, v := range methods {
			if isWrite(m) {
				w += v
			}
		}
	}
	// An agent of a partition renews its endpoints' Leases every 2 s:
	// those writes are not work on objects.
	return w - scrape.sum("sync_agent_endpoint_lease_writes_total", nil)
}

// settle waits until the agent's write count stays the same for settleQuiet.
func (e *env) settle() {
	deadline := time.Now().Add(settleTimeout)
	last, since := e.writes(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(settleInterval)
		if w := e.writes(); w != last {
			last, since = w, time.Now()
			continue
		}
		if time.Since(since) >= settleQuiet {
			return
		}
	}
	logf("the agent still writes after %v; continuing", settleTimeout)
}

// kcpMetricsConfig is an admin config for kcp's /metrics (outside any
// workspace).
func (e *env) kcpMetricsConfig() *rest.Config {
	c := e.k.AdminConfig("root")
	c.Host = e.k.BaseURL
	return c
}

// scrapeServer reads an API server's /metrics; nil if it cannot be read.
func (e *env) scrapeServer(cfg *rest.Config) samples {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	data, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(e.t.Context())
	if err != nil && cfg.Host == e.k.BaseURL {
		// kcp may serve it only inside a workspace.
		data, err = cs.RESTClient().Get().AbsPath("/clusters/root/metrics").DoRaw(e.t.Context())
	}
	if err != nil {
		logf("cannot read %s/metrics: %v", cfg.Host, err)
		return nil
	}
	return parseMetrics(strings.NewReader(string(data)))
}

// serverRequests sums apiserver_request_total by "VERB resource[/subresource]".
func serverRequests(s samples) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s["apiserver_request_total"] {
		r := x.labels["resource"]
		if sub := x.labels["subresource"]; sub != "" {
			r += "/" + sub
		}
		if r == "" {
			continue // non-resource requests (health checks, /metrics)
		}
		out[x.labels["verb"]+" "+r] += x.value
	}
	return out
}

// serverDelta returns the servers' request counts of the create phase per
// object by verb and resource. The bench's own creates in kcp are taken
// off; nothing else of the bench talks to the service cluster meanwhile.
// kcp's own controllers are included (there is no per-user label).
func (e *env) serverDelta(svcBefore, kcpBefore samples) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	n := float64(e.cfg.Objects)
	delta := func(before, after samples) map[string]float64 {
		if before == nil || after == nil {
			return nil
		}
		d := serverRequests(after)
		for k, v := range serverRequests(before) {
			d[k] -= v
		}
		return d
	}
	if d := delta(svcBefore, e.scrapeServer(e.svc.Config)); d != nil {
		out[sideService] = d
	}
	if d := delta(kcpBefore, e.scrapeServer(e.kcpMetricsConfig())); d != nil {
		d["CREATE things"] -= n
		if e.cfg.Related {
			d["CREATE secrets"] -= n
		}
		out[sideKcp] = d
	}
	for _, m := range out {
		for k, v := range m {
			if v < 0.5 || k == "WATCH things" && v < n/10 {
				// Counts below one per phase are the steady background.
				delete(m, k)
				continue
			}
			m[k] = v / n
		}
	}
	return out
}

// memory is what /proc/<pid>/status says, in MiB.
type memory struct{ RSS, HWM float64 }

func procMemory(pid int) memory {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}
	}
	var m memory
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb / 1024
		case "VmHWM:":
			m.HWM = kb / 1024
		}
	}
	return m
}

// procCPU returns the user+system CPU seconds of a process.
func procCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	// Fields after the command name (in parentheses, may contain spaces):
	// state is field 3, utime 14, stime 15.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks
}

// cpuSnapshot is the CPU seconds of the bench's child processes by command
// name (kcp, kube-apiserver, etcd, the agent), of the bench itself, and of
// the whole machine (busy time over all cores, other users included).
type cpuSnapshot map[string]float64

// Keys of cpuSnapshot besides the child processes' command names.
const (
	cpuBench   = "bench"
	cpuMachine = "machine (all processes)"
)

func takeCPU() cpuSnapshot {
	s := cpuSnapshot{cpuBench: procCPU(os.Getpid()), cpuMachine: machineBusy()}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return s
	}
	self := strconv.Itoa(os.Getpid())
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		st := string(data)
		open, end := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(st[end+1:])
		if len(f) < 2 || f[1] != self {
			continue
		}
		s[st[open+1:end]] += procCPU(pid)
	}
	return s
}

// machineBusy returns the busy CPU seconds of all cores since boot.
func machineBusy() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 || i >= 7 { // idle, iowait; steal and guest are not ours
			continue
		}
		busy += x
	}
	return busy / clockTicks
}

func cpuDelta(before, after cpuSnapshot) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d >= 0.005 {
			out[k] = d
		}
	}
	return out
}
