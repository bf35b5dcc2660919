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

// Package endpointlease decides which agent of a partitioned export serves
// a virtual workspace endpoint (one shard's) when the endpoint slices of
// several partitions list it: kcp adds a shard to the slice of the
// partition it moves to but keeps it in the slice of the partition it left
// while workspaces on it bind the export. Each endpoint has a Lease in the
// service cluster; only its holder serves the endpoint, and every write of
// a pass over the endpoint's workspaces passes the holder's endpoint fence
// (internal/fence), so two agents never write for one shard at once.
//
// The package decides from what a Lease says and what the agent sees
// (Decide), and runs one claim per listed endpoint (Claims). It must not
// let an agent serve an endpoint whose Lease it has not written as holder
// within the renew deadline, nor give a Lease up before the writes under
// its fence have been cut.
package endpointlease

import (
	"maps"
	"time"
)

// Record is what an endpoint's Lease says.
type Record struct {
	// Holder is the identity of the replica that serves the endpoint (""
	// nobody); HolderPartition is its partition.
	Holder, HolderPartition string
	// HandoverTo is the partition that asked the holder to give the
	// endpoint up.
	HandoverTo string
	// MoveTo is the partition an administrator moved the endpoint to
	// (kcp does not list a shard again in a slice that still lists it, so
	// a shard moved back is told this way): that partition's agent makes
	// itself the home once its slice lists the endpoint.
	MoveTo string
	// Listings: for each partition whose slice lists the endpoint, when it
	// was first seen listed, as a sequence number (higher: later).
	Listings map[string]int64
}

// Home is the partition whose slice listed the endpoint last (kcp adds a
// shard only to the slice of a partition that selects it, so the latest
// listing is where the shard was moved to); "" if none lists it.
func (r Record) Home() string {
	home, last := "", int64(-1)
	for p, seq := range r.Listings {
		if seq > last || seq == last && p < home {
			home, last = p, seq
		}
	}
	return home
}

func (r Record) clone() Record {
	r.Listings = maps.Clone(r.Listings)
	if r.Listings == nil {
		r.Listings = map[string]int64{}
	}
	return r
}

// View is what one agent sees when it decides.
type View struct {
	// Exists: the Lease exists (else Record is empty).
	Exists bool
	Record Record
	// Unchanged is how long this agent has seen the Lease's holder and
	// renew time unchanged (measured on its own clock, like leader
	// election: clocks of different machines are never compared).
	Unchanged time.Duration
	// Partition and Identity are this agent's.
	Partition, Identity string
	// Listed: this agent's endpoint slice lists the endpoint.
	Listed bool
	// Frozen: a release is under way (a PublishedResource is being
	// deleted or deselected while a release finalizer is on it): no
	// endpoint changes hands, except one its slice no longer lists, so
	// that each is released by the agent that holds it.
	Frozen bool
	// Passive: the agent only releases (its sync is off, as when its
	// partition is retired): it records no listing and asks for nothing,
	// so that it never becomes a home that serves nothing, and takes only
	// an endpoint whose objects are its partition's to release: one an
	// earlier process of its partition held, or a free one (or one without
	// a Lease) that no other partition lists or was handed to. It leaves
	// any other to the other partitions (Decision.Abstain).
	Passive bool
}

// Timing is how long a holder counts as alive without renewing.
type Timing struct {
	// LeaseDuration: after it, the endpoint's home partition takes the
	// Lease of a holder that stopped renewing.
	LeaseDuration time.Duration
	// TakeoverAfter (longer): after it, a partition that lists the
	// endpoint but is not its home takes it too (the home agent is down).
	TakeoverAfter time.Duration
	// SamePartitionAtOnce: the holder's partition's leader Lease fences
	// an earlier holder of the same partition, so the current leader takes
	// its Lease at once (leader election on); otherwise it waits
	// LeaseDuration like for any other holder.
	SamePartitionAtOnce bool
}

// Decision is what to do next.
type Decision struct {
	// Write: write Record to the Lease (create it if it does not exist),
	// with the resourceVersion read; Delete: delete the Lease instead (no
	// partition lists the endpoint and nobody holds it).
	Write, Delete bool
	Record        Record
	// Serve: serve the endpoint once the write succeeded (the agent holds
	// the Lease).
	Serve bool
	// Yield: stop serving first, and write only once the writes under the
	// endpoint's fence have been cut.
	Yield bool
	// Abstain: a passive agent leaves the endpoint to the other
	// partitions; its objects are not this agent's to release.
	Abstain bool
}

// Decide is one step of an agent's claim of an endpoint.
func Decide(v View, t Timing) Decision {
	rec := v.Record.clone()
	if v.Passive && !passiveMayTake(v, rec) {
		return Decision{Record: rec, Abstain: true}
	}
	listed := false
	if _, ok := rec.Listings[v.Partition]; ok != v.Listed && !v.Passive {
		listed = true
		if v.Listed {
			rec.Listings[v.Partition] = nextListing(rec.Listings)
		} else {
			delete(rec.Listings, v.Partition)
		}
	}
	if rec.MoveTo == v.Partition && v.Listed && !v.Passive {
		// Moved here: listed last, whatever the slices did before. An
		// endpoint already given up for another partition is this one's
		// to take (its holder waited before it let go).
		rec.Listings[v.Partition] = nextListing(rec.Listings)
		rec.MoveTo = ""
		if rec.Holder == "" {
			rec.HandoverTo = ""
		}
		listed = true
	}
	home := rec.Home()
	switch {
	case v.Exists && rec.Holder == v.Identity:
		asked := rec.HandoverTo != "" && rec.HandoverTo != v.Partition && rec.HandoverTo == home && !v.Frozen
		if !v.Listed || asked {
			rec.Holder, rec.HolderPartition = "", ""
			return Decision{Write: true, Record: rec, Yield: true}
		}
		if rec.HandoverTo == v.Partition {
			rec.HandoverTo = ""
		}
		return Decision{Write: true, Record: rec, Serve: true}
	case !v.Listed:
		if v.Exists && rec.Holder == "" && len(rec.Listings) == 0 {
			return Decision{Delete: true}
		}
		return Decision{Write: v.Exists && listed, Record: rec}
	case rec.Holder != "" && rec.HolderPartition == v.Partition && t.SamePartitionAtOnce:
		// An earlier leader of this partition: the partition's leader
		// Lease fences it, so this one takes over at once.
		return acquire(rec, v)
	}
	alive := t.LeaseDuration
	if home != v.Partition {
		alive = t.TakeoverAfter
	}
	switch {
	case rec.Holder != "" && (v.Unchanged < alive || v.Frozen && rec.HolderPartition != v.Partition):
		// Another partition's agent serves it (or, without leader
		// election, another process of this partition); during a release
		// even one of another partition that stopped renewing keeps it
		// (its partition's finalizer waits for it). An earlier process of
		// this partition that stopped renewing is taken over (the
		// endpoint stays with the partition).
		if home == v.Partition && rec.HandoverTo != v.Partition && rec.HolderPartition != v.Partition && !v.Frozen {
			rec.HandoverTo = v.Partition
			listed = true
		}
		return Decision{Write: listed || !v.Exists, Record: rec}
	case rec.Holder == "" && rec.HandoverTo != "" && rec.HandoverTo != v.Partition && v.Unchanged < alive:
		// Given up for another partition: it takes it first.
		return Decision{Write: listed || !v.Exists, Record: rec}
	case rec.Holder == "" && v.Exists && home != v.Partition && v.Unchanged < t.LeaseDuration:
		// Free, but the home partition's agent may be about to take it.
		return Decision{Write: listed, Record: rec}
	}
	return acquire(rec, v)
}

// passiveMayTake: the endpoint's objects are the passive agent's
// partition's to release (see View.Passive).
func passiveMayTake(v View, rec Record) bool {
	if rec.Holder != "" {
		return v.Exists && rec.HolderPartition == v.Partition
	}
	for p := range rec.Listings {
		if p != v.Partition {
			return false
		}
	}
	return v.Listed && (rec.HandoverTo == "" || rec.HandoverTo == v.Partition)
}

// acquire takes the Lease; a handover asked of an earlier holder is void
// (the home asks again if it is alive).
func acquire(rec Record, v View) Decision {
	rec.Holder, rec.HolderPartition = v.Identity, v.Partition
	rec.HandoverTo = ""
	return Decision{Write: true, Record: rec, Serve: true}
}

func nextListing(l map[string]int64) int64 {
	var last int64
	for _, seq := range l {
		last = max(last, seq)
	}
	return last + 1
}
