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

package endpointlease

import (
	"reflect"
	"testing"
	"time"
)

// TestDecide: each state of an endpoint's Lease, as one agent sees it, and
// what that agent does.
func TestDecide(t *testing.T) {
	timing := Timing{LeaseDuration: 15 * time.Second, TakeoverAfter: time.Minute, SamePartitionAtOnce: true}
	eu := func(listed bool, unchanged time.Duration, rec Record, exists bool) View {
		return View{Exists: exists, Record: rec, Unchanged: unchanged, Partition: "eu", Identity: "eu-1", Listed: listed}
	}
	l := func(kv ...any) map[string]int64 {
		m := map[string]int64{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = int64(kv[i+1].(int))
		}
		return m
	}
	tests := []struct {
		name string
		view View
		want Decision
	}{
		{"no Lease, listed: take it", eu(true, 0, Record{}, false),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}}},
		{"no Lease, not listed: nothing", eu(false, 0, Record{}, false),
			Decision{Record: Record{Listings: l()}}},
		{"held, listed: renew", eu(true, time.Second, Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}}},
		{"held, no longer listed: yield and drop the listing", eu(false, time.Second, Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}, true),
			Decision{Write: true, Yield: true, Record: Record{Listings: l()}}},
		{"held, listed later by another partition that asks for it: yield", eu(true, time.Second, Record{Holder: "eu-1", HolderPartition: "eu", HandoverTo: "us", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Yield: true, Record: Record{HandoverTo: "us", Listings: l("eu", 1, "us", 2)}}},
		{"held, listed later by another partition that has not asked (down): renew", eu(true, time.Second, Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1, "us", 2)}}},
		{"held, asked by a partition that is not the home: renew", eu(true, time.Second, Record{Holder: "eu-1", HolderPartition: "eu", HandoverTo: "us", Listings: l("eu", 2, "us", 1)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", HandoverTo: "us", Listings: l("eu", 2, "us", 1)}}},
		{"held, asked by the home, a release under way: renew", View{Exists: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", HandoverTo: "us", Listings: l("eu", 1, "us", 2)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Frozen: true},
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", HandoverTo: "us", Listings: l("eu", 1, "us", 2)}}},
		{"held, no longer listed, a release under way: yield all the same (kcp lists a shard while it has bindings)", View{Exists: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Frozen: true},
			Decision{Write: true, Yield: true, Record: Record{Listings: l()}}},
		{"the home, a release under way: do not ask for it", View{Exists: true, Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 1, "eu", 2)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Frozen: true},
			Decision{Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 1, "eu", 2)}}},
		{"the holder stopped renewing long ago, a release under way: leave it to its partition", View{Exists: true, Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 1, "eu", 2)}, Unchanged: 2 * time.Minute, Partition: "eu", Identity: "eu-1", Listed: true, Frozen: true},
			Decision{Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 1, "eu", 2)}}},
		{"free, a release under way: take it (nobody writes for it)", View{Exists: true, Record: Record{Listings: l("eu", 1)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Frozen: true},
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}}},
		{"held by an earlier leader of this partition: take it at once", eu(true, time.Second, Record{Holder: "eu-0", HolderPartition: "eu", Listings: l("eu", 1)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}}},
		{"held by another partition, newly listed here: record the listing, ask for it", eu(true, time.Second, Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 1)}, true),
			Decision{Write: true, Record: Record{Holder: "us-1", HolderPartition: "us", HandoverTo: "eu", Listings: l("us", 1, "eu", 2)}}},
		{"held by another partition, asked already: wait", eu(true, 5*time.Second, Record{Holder: "us-1", HolderPartition: "us", HandoverTo: "eu", Listings: l("us", 1, "eu", 2)}, true),
			Decision{Record: Record{Holder: "us-1", HolderPartition: "us", HandoverTo: "eu", Listings: l("us", 1, "eu", 2)}}},
		{"held by another partition that is the home: wait", eu(true, 20*time.Second, Record{Holder: "us-1", HolderPartition: "us", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("eu", 1, "us", 2)}}},
		{"the home's holder stopped renewing long ago: take it", eu(true, 61*time.Second, Record{Holder: "us-1", HolderPartition: "us", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1, "us", 2)}}},
		{"the holder stopped renewing, this is the home: take it after the lease duration", eu(true, 16*time.Second, Record{Holder: "us-1", HolderPartition: "us", HandoverTo: "eu", Listings: l("us", 1, "eu", 2)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("us", 1, "eu", 2)}}},
		{"given up for this partition: take it", eu(true, time.Second, Record{HandoverTo: "eu", Listings: l("us", 1, "eu", 2)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("us", 1, "eu", 2)}}},
		{"given up for another partition: wait", eu(true, 20*time.Second, Record{HandoverTo: "us", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Record: Record{HandoverTo: "us", Listings: l("eu", 1, "us", 2)}}},
		{"given up for another partition that did not take it: take it", eu(true, 61*time.Second, Record{HandoverTo: "us", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1, "us", 2)}}},
		{"moved here by the administrator, held by the old home: become the home, ask for it", eu(true, time.Second, Record{Holder: "us-1", HolderPartition: "us", MoveTo: "eu", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Record: Record{Holder: "us-1", HolderPartition: "us", HandoverTo: "eu", Listings: l("eu", 3, "us", 2)}}},
		{"moved here by the administrator, not listed here yet: wait for the slice", eu(false, time.Second, Record{Holder: "us-1", HolderPartition: "us", MoveTo: "eu", Listings: l("us", 2)}, true),
			Decision{Record: Record{Holder: "us-1", HolderPartition: "us", MoveTo: "eu", Listings: l("us", 2)}}},
		{"moved elsewhere by the administrator: the holder leaves it to that partition", eu(true, time.Second, Record{Holder: "eu-1", HolderPartition: "eu", MoveTo: "us", Listings: l("eu", 2, "us", 1)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", MoveTo: "us", Listings: l("eu", 2, "us", 1)}}},
		{"moved here by the administrator while holding it: clear the request", eu(true, time.Second, Record{Holder: "eu-1", HolderPartition: "eu", MoveTo: "eu", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 3, "us", 2)}}},
		{"moved here by the administrator, already given up for a third partition: take it", eu(true, time.Second, Record{HandoverTo: "ap", MoveTo: "eu", Listings: l("eu", 1, "us", 2, "ap", 3)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 4, "us", 2, "ap", 3)}}},
		{"passive (only releasing), free but listed by another partition: leave it", View{Exists: true, Record: Record{Listings: l("us", 1)}, Unchanged: 2 * time.Minute, Partition: "eu", Identity: "eu-1", Listed: true, Passive: true},
			Decision{Abstain: true, Record: Record{Listings: l("us", 1)}}},
		{"passive, free, handed to another partition: leave it", View{Exists: true, Record: Record{HandoverTo: "us", Listings: l("eu", 1)}, Unchanged: 2 * time.Minute, Partition: "eu", Identity: "eu-1", Listed: true, Passive: true},
			Decision{Abstain: true, Record: Record{HandoverTo: "us", Listings: l("eu", 1)}}},
		{"passive, no Lease, listed only here: create it, without a listing (its objects are this partition's)", View{Partition: "eu", Identity: "eu-1", Listed: true, Passive: true},
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l()}}},
		{"passive, not listed here: leave it", View{Partition: "eu", Identity: "eu-1", Passive: true},
			Decision{Abstain: true, Record: Record{Listings: l()}}},
		{"passive, another partition's holder stopped renewing long ago, this is the home: leave it", View{Exists: true, Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 1, "eu", 2)}, Unchanged: 2 * time.Minute, Partition: "eu", Identity: "eu-1", Listed: true, Passive: true, Frozen: true},
			Decision{Abstain: true, Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 1, "eu", 2)}}},
		{"passive, an earlier process of its partition holds it: take it (its objects are this partition's to release)", View{Exists: true, Record: Record{Holder: "eu-0", HolderPartition: "eu", Listings: l("eu", 1)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Passive: true},
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}}},
		{"passive, moved here by the administrator: take nothing", View{Exists: true, Record: Record{Holder: "us-1", HolderPartition: "us", MoveTo: "eu", Listings: l("us", 1)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Passive: true},
			Decision{Abstain: true, Record: Record{Holder: "us-1", HolderPartition: "us", MoveTo: "eu", Listings: l("us", 1)}}},
		{"passive, an earlier process of its partition holds it, moved here by the administrator: take it, leave the move to an agent that syncs", View{Exists: true, Record: Record{Holder: "eu-0", HolderPartition: "eu", MoveTo: "eu", Listings: l("eu", 1, "us", 2)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Passive: true},
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", MoveTo: "eu", Listings: l("eu", 1, "us", 2)}}},
		{"passive, holding it: renew (its objects are its to release)", View{Exists: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}, Unchanged: time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Passive: true},
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1)}}},
		{"free, the home is another partition: give it the lease duration", eu(true, 5*time.Second, Record{Listings: l("eu", 1, "us", 2)}, true),
			Decision{Record: Record{Listings: l("eu", 1, "us", 2)}}},
		{"free, the home is another partition that did not take it: take it", eu(true, 16*time.Second, Record{Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Serve: true, Record: Record{Holder: "eu-1", HolderPartition: "eu", Listings: l("eu", 1, "us", 2)}}},
		{"held by another partition, no longer listed here: drop the listing", eu(false, time.Second, Record{Holder: "us-1", HolderPartition: "us", Listings: l("eu", 1, "us", 2)}, true),
			Decision{Write: true, Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 2)}}},
		{"nobody holds or lists it: delete the Lease", eu(false, time.Second, Record{Listings: l("eu", 1)}, true),
			Decision{Delete: true}},
		{"held elsewhere, not listed here, nothing to change", eu(false, time.Second, Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 2)}, true),
			Decision{Record: Record{Holder: "us-1", HolderPartition: "us", Listings: l("us", 2)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.view.Record.clone()
			got := Decide(tt.view, timing)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decide =\n  %+v\nwant\n  %+v", got, tt.want)
			}
			if tt.view.Record.Listings != nil && !reflect.DeepEqual(tt.view.Record.clone(), before) {
				t.Error("Decide changed the Record it was given")
			}
		})
	}
}

// TestHome: the partition that listed the endpoint last.
func TestHome(t *testing.T) {
	for _, tt := range []struct {
		listings map[string]int64
		want     string
	}{
		{nil, ""},
		{map[string]int64{"eu": 1}, "eu"},
		{map[string]int64{"eu": 3, "us": 2}, "eu"},
		{map[string]int64{"eu": 3, "us": 4}, "us"},
		{map[string]int64{"b": 3, "a": 3}, "a"},
	} {
		if got := (Record{Listings: tt.listings}).Home(); got != tt.want {
			t.Errorf("Home(%v) = %q, want %q", tt.listings, got, tt.want)
		}
	}
}

// TestDecideWithoutLeaderElection: without leader election an earlier
// holder of the same partition may still run (two processes of one
// partition), so its Lease is taken only once it stopped renewing.
func TestDecideWithoutLeaderElection(t *testing.T) {
	timing := Timing{LeaseDuration: 15 * time.Second, TakeoverAfter: time.Minute}
	rec := Record{Holder: "eu-0", HolderPartition: "eu", Listings: map[string]int64{"eu": 1}}
	if d := Decide(View{Exists: true, Record: rec, Unchanged: 5 * time.Second, Partition: "eu", Identity: "eu-1", Listed: true}, timing); d.Serve || d.Write {
		t.Errorf("a live holder of the same partition lost its Lease: %+v", d)
	}
	if d := Decide(View{Exists: true, Record: rec, Unchanged: 16 * time.Second, Partition: "eu", Identity: "eu-1", Listed: true}, timing); !d.Serve {
		t.Errorf("a holder of the same partition that stopped renewing kept its Lease: %+v", d)
	}
	// During a release (and a release-only agent is always in one), an
	// earlier process of the same partition is taken over all the same:
	// the endpoint stays with the partition, whose finalizer waits for it.
	for _, passive := range []bool{false, true} {
		v := View{Exists: true, Record: rec, Unchanged: 16 * time.Second, Partition: "eu", Identity: "eu-1", Listed: true, Frozen: true, Passive: passive}
		if d := Decide(v, timing); !d.Serve {
			t.Errorf("passive %v, a release under way: a holder of the same partition that stopped renewing kept its Lease: %+v", passive, d)
		}
		v.Unchanged = 5 * time.Second
		if d := Decide(v, timing); d.Serve || d.Write {
			t.Errorf("passive %v, a release under way: a live holder of the same partition lost its Lease: %+v", passive, d)
		}
	}
}
