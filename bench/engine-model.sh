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
# usage: bench/engine-model.sh [commands]        (default 100000; ~1 min)
#        OUT=dir bench/engine-model.sh           (keeps the callgrind file)
# The same binary and input give the same counts. The book's setup and the
# warm-up are replayed too (in go test's first b.N=1 run as well), so
# compare the totals of runs with the same argument rather than dividing
# by it.
set -eu
n=${1:-100000}
out=${OUT:-$(mktemp -d)}
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "engine-model: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
go test -c -o "$out/engine.test" ./engine/
# GOGC=off: no collection while measuring (the steady state allocates
# nothing; write barriers of a running GC would be counted otherwise);
# asyncpreemptoff: valgrind does not survive Go's preemption signals.
(cd "$out" && GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
	--cache-sim=yes --D1=32768,8,64 --LL=1048576,8,64 \
	--collect-atstart=no --toggle-collect='github.com/weexcore/exchange/engine_test.(*bench).replay' \
	--callgrind-out-file="$out/callgrind.out" ./engine.test -test.run '^$' -test.bench Mixed \
	-test.benchtime "${n}x" >/dev/null 2>&1)
callgrind_annotate "$out/callgrind.out" | grep 'PROGRAM TOTALS' | sed 's/([^)]*)//g; s/,//g' |
	awk '{printf "instructions %d  L1 read misses %d  L1 write misses %d  L2 read misses %d  L2 write misses %d\n", $1, $5, $6, $8, $9}'
echo "per function: callgrind_annotate $out/callgrind.out"
