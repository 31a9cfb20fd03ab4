#!/bin/sh
# engine-model.sh: a deterministic cost of BenchmarkMixed's timed part, for
# comparing engine changes on a shared machine where the wall-clock number
# moves by half from one minute to the next (other tenants, SMT siblings).
#
# valgrind's callgrind counts what the replay of the recorded stream does
# (bench.replay in engine/alloc_test.go; nothing of the generator): executed
# instructions, and misses of a simulated 32 KiB L1 and a 1 MiB L2 (this
# machine's Zen 4 core; the simulated L2 stands in for "last level", and
# has no prefetcher, so the reads of the recorded command stream, which a
# real core prefetches, count as misses here: compare runs, don't read the
# miss counts as the hardware's).
#
# The counters are zeroed before each replay call and dumped after it; the
# timed commands are the last calls' (chunks of 1,048,576: mixedChunk in
# engine/alloc_test.go), so the numbers are per command of the timed part,
# warm-up and book setup left out.
#
# usage: bench/engine-model.sh [commands]        (default 100000; 1-6 min here)
#        PGO=1 bench/engine-model.sh             (built with the server's profile)
#        OUT=dir bench/engine-model.sh           (keeps the callgrind files)
#        TOP=40 bench/engine-model.sh            (functions listed; default 20)
# The same binary and input give the same counts.
set -eu
n=${1:-100000}
out=${OUT:-$(mktemp -d)}
cd "$(dirname "$0")/.."
GOAMD64=${GOAMD64:-$(tools/goamd64.sh)} # as the Makefile builds
export GOAMD64
command -v valgrind >/dev/null || { echo "engine-model: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
pgo=off
[ "${PGO:-0}" = 1 ] && pgo=$(pwd)/cmd/exchanged/default.pgo
go test -c -pgo="$pgo" -o "$out/engine.test" ./engine/
rm -f "$out"/callgrind.out*
# GOGC=off: no collection while measuring (the steady state allocates
# nothing; write barriers of a running GC would be counted otherwise);
# asyncpreemptoff: valgrind does not survive Go's preemption signals.
(cd "$out" && GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
	--cache-sim=yes --D1=32768,8,64 --LL=1048576,8,64 \
	--zero-before='github.com/weexcore/exchange/engine_test.(*bench).replay' \
	--dump-after='github.com/weexcore/exchange/engine_test.(*bench).replay' \
	--callgrind-out-file="$out/callgrind.out" ./engine.test -test.run '^$' -test.bench 'Mixed$' \
	-test.benchtime "${n}x" >/dev/null 2>&1)
dumps=$(ls "$out"/callgrind.out.* | wc -l)
chunks=$(( (n + 1048575) / 1048576 ))
i=$((dumps - chunks + 1))
files=""
while [ $i -le "$dumps" ]; do
	files="$files $out/callgrind.out.$i"
	i=$((i + 1))
done
# shellcheck disable=SC2086 # a list of paths without spaces
cat $files | grep '^summary:' | awk -v n="$n" '{for (i = 2; i <= NF; i++) s[i] += $i}
	END {printf "per command (%d timed): instructions %.1f  L1 read misses %.2f  L1 write misses %.2f  L2 read misses %.3f  L2 write misses %.3f\n",
		n, s[2]/n, s[6]/n, s[7]/n, s[9]/n, s[10]/n}'
# Self cost per function, summed here: callgrind_annotate (3.19) charges
# every function to runtime.systemstack at 1,600% on a Go binary (the
# goroutine stack switches look like a call cycle to it). A cost line
# after a calls= line is the call's inclusive cost, not the caller's own;
# names are defined once per file as "(id) name" and then used as "(id)".
echo "per function, instructions per command (own code and what is inlined into it):"
# shellcheck disable=SC2086 # a list of paths without spaces
awk -v n="$n" 'FNR == 1 { delete name }
	/^c?fn=/ { i = index($0, "="); s = substr($0, i + 1); id = s; sub(/ .*/, "", id)
		if (s != id) name[id] = substr(s, length(id) + 2)
		if (substr($0, 1, 1) == "f") fn = name[id]
		next }
	/^calls=/ { skip = 1; next }
	/^[0-9+*-]/ { if (skip) { skip = 0; next } self[fn] += $2 }
	END { for (f in self) if (self[f] / n >= 0.5) printf "%8.1f  %s\n", self[f] / n, f }' $files | sort -rn | head -"${TOP:-20}"
