#!/usr/bin/env bash
# Runs one fuzz target for a duration: hack/fuzz.sh <package> <target> <fuzztime>.
#
# Go 1.26's fuzzing coordinator can report "context deadline exceeded" as a
# failure when -fuzztime runs out while a worker is still busy (golang/go
# issue 75804, fixed in Go 1.27); it writes no failing input then. Such a
# run is tried once more. Anything else that fails (a failing input written,
# a panic, another error) fails at once.
set -uo pipefail

pkg=$1 target=$2 fuzztime=$3
for attempt in 1 2; do
	log=$(mktemp)
	go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	if [ "$status" -eq 0 ]; then
		rm -f "$log"
		exit 0
	fi
	if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' "$log" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$log"; then
		echo "fuzz $target: the coordinator's deadline race (no failing input written); trying once more"
		rm -f "$log"
		continue
	fi
	rm -f "$log"
	exit "$status"
done
