#!/bin/sh
# engine-ab.sh: wall-clock A/B of BenchmarkMixed between two git revisions,
# in interleaved rounds: on a shared VM the same binary's ns/op moves by a
# third from one minute to the next, so only runs taken side by side
# compare, and only over many rounds. Count instructions first with
# engine-model.sh; this says whether they show on the clock.
#
# usage: bench/engine-ab.sh OLD NEW [rounds]     (revisions; default 20 rounds,
#                                                 ~3 s per run, 2 runs per round)
#        bench/engine-ab.sh HEAD~1 .             (. is the working tree)
# Both binaries are built with the server's PGO profile when it exists, as
# make bench runs them (PGO=0 to build without).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD NEW [rounds]" >&2; exit 2; }
old=$1
new=$2
rounds=${3:-20}
cd "$(dirname "$0")/.."
GOAMD64=${GOAMD64:-$(tools/goamd64.sh)} # as the Makefile builds
export GOAMD64
root=$(pwd)
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

# build REV NAME: the engine's test binary at REV ("." = the working tree)
build() {
	src=$root
	if [ "$1" != . ]; then
		src=$d/src-$2
		git -C "$root" worktree add -q --detach "$src" "$1"
	fi
	pgo=off
	if [ "${PGO:-1}" = 1 ] && [ -f "$src/cmd/exchanged/default.pgo" ]; then
		pgo=$src/cmd/exchanged/default.pgo
	fi
	(cd "$src" && go test -c -pgo="$pgo" -o "$d/$2.test" ./engine/)
	if [ "$1" != . ]; then
		git -C "$root" worktree remove --force "$src"
	fi
}
build "$old" old
build "$new" new

i=0
while [ $i -lt "$rounds" ]; do
	i=$((i + 1))
	for b in old new; do
		ns=$("$d/$b.test" -test.run '^$' -test.bench 'Mixed$' -test.benchtime 1500000x | awk '/^BenchmarkMixed-/ {print $3}')
		echo "$b $ns" >>"$d/runs"
	done
	printf '\rround %d/%d' $i "$rounds" >&2
done
echo >&2
awk '
	{ v[$1, ++n[$1]] = $2 }
	END {
		for (r = 1; r <= n["old"]; r++) {
			d = v["new", r] - v["old", r]; sum += d; if (d < 0) wins++
			dd[r] = d
		}
		m = n["old"] # the median round difference: one slow round moves it least
		for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (dd[y] < dd[x]) { t = dd[x]; dd[x] = dd[y]; dd[y] = t }
		dmed = m % 2 ? dd[(m + 1) / 2] : (dd[m / 2] + dd[m / 2 + 1]) / 2
		for (b = 0; b < 2; b++) {
			k = b ? "new" : "old"
			m = n[k]
			for (x = 1; x <= m; x++) s[x] = v[k, x]
			for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (s[y] < s[x]) { t = s[x]; s[x] = s[y]; s[y] = t }
			med = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
			printf "%s: median %.1f ns/op, min %.1f, max %.1f (%d runs)\n", k, med, s[1], s[m], m
		}
		printf "new - old: %.1f ns/op on average, %.1f the median round, over %d rounds; new faster in %d of them\n", sum / n["old"], dmed, n["old"], wins
	}' "$d/runs"
