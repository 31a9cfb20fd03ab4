#!/bin/sh
# goamd64.sh: the x86-64 microarchitecture level this machine's CPU supports,
# for GOAMD64 (Go's -march): v3 (AVX2, BMI1/2, FMA, LZCNT, MOVBE, F16C),
# else v2 (SSE4.2, POPCNT, CX16), else v1; nothing on other architectures.
# The Makefile and the bench scripts build with it unless GOAMD64 is set, so
# the server and its benchmarks are compiled for the CPU they run on, as
# `-march=native` would. A binary built at v3 refuses to start on an older
# CPU: build with GOAMD64=v1 to ship one binary to unknown machines.
#
# Why: BenchmarkMixed (engine/) at v3 against v1, interleaved rounds on this
# 2-vCPU Zen 4 VM: -4.4 and -4.1 ns/op (pairwise medians, 12 rounds each;
# v3 faster in 10 and 9 of them). v4 (AVX-512) against v3: +1.4 ns/op,
# faster in 4 of 10: not worth the narrower set of CPUs.
[ "$(uname -m)" = x86_64 ] || exit 0
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) || { echo v1; exit 0; }
has() {
	for f in "$@"; do
		case " $flags " in *" $f "*) ;; *) return 1 ;; esac
	done
}
if has avx avx2 bmi1 bmi2 f16c fma abm movbe xsave sse4_2 popcnt cx16; then
	echo v3
elif has sse4_2 popcnt cx16 ssse3 sse4_1; then
	echo v2
else
	echo v1
fi
