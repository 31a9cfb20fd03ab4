#!/bin/bash
# fuzz.sh PKG TARGET FUZZTIME: runs one fuzz target (make soak), and tells
# a finding from a known flake of Go's fuzzing coordinator: with a
# duration -fuzztime, a worker still busy when the deadline fires can make
# the run end "--- FAIL ... context deadline exceeded" with nothing found
# and no failing input written (golang/go#51484, #75804; seen here once in
# FuzzAppendFixed, on a loaded machine, and not again in the next runs).
# Such a run is retried once; a second one, or any other failure, fails.
# A finding always writes its input to testdata/fuzz/TARGET.
set -u
[ $# -eq 3 ] || { echo "usage: $0 PKG TARGET FUZZTIME" >&2; exit 2; }
pkg=$1 target=$2 fuzztime=$3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for try in 1 2; do
	"${GO:-go}" test -buildvcs=false -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && exit 0
	if [ "$try" -eq 1 ] && grep -q 'context deadline exceeded' "$log" &&
		! grep -q -e 'Failing input written' -e 'panic:' -e '_test.go:[0-9]*:' "$log"; then
		echo "fuzz.sh: $target ended on Go's -fuzztime deadline with nothing found; running it once more" >&2
		continue
	fi
	exit "$rc"
done
exit 1
