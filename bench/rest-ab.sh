#!/bin/sh
# rest-ab.sh: wall-clock A/B of two REST server binaries at one offered
# rate, in interleaved rounds (the order alternates), for trying a server
# change on a shared VM whose speed moves from one minute to the next.
# Each run starts the server on an empty data directory, creates 100 users
# with 500 resting orders per market and warms up at 15,000 req/s for 5 s
# (loadgen; WARM=RATE,RATE,... runs 5 s steps at those rates instead, each
# after a 0.5 s pause and a 300 ms lead-in, as make bench's are: e.g.
# WARM=25000,38000,57000,48000,52000,55000 puts the server through
# overloaded steps like make bench's saturation search before the measured
# ones, which is where make bench reads its half-saturation p99),
# then runs one loadgen with two 8 s steps at RATE req/s and prints the
# second step's p50 / p99 / p99.9 / max (ms), and the server's
# CPU ticks (1/100 s, user + system) over both steps and the whole
# machine's (user + nice + system + irq + softirq from /proc/stat: the
# generator, and kernel threads such as the worker that runs an AIO
# fdatasync, which the server's ticks miss). The first step is there
# because a new loadgen process starts slowly (its 128 connections are
# opened by its first requests): in two runs at 19,200/s traced per
# request, 810 and 990 requests of its first ~60 ms took over 4 ms, up to
# 26 and 28 ms, while the server's own answers stayed under 6.2 ms. That
# is enough to move a p99 over 10 s, and a long-running client (make
# bench's) does not have it.
#
# The server runs on CPU 0 with -cpus 0, as make bench runs it on this
# 2-CPU machine (benchrun -server-cpus half); CPUS=LIST sets another list,
# CPUS= none.
#
# usage: bench/rest-ab.sh "BIN_A BIN_B" RATE [ROUNDS]   (default 6 rounds, ~45 s each)
# A BIN may be a wrapper that execs the server with another environment,
# e.g. printf '#!/bin/sh\nGOMAXPROCS=1 exec bin/exchanged "$@"\n'.
# The server configuration (8 markets, rate limits off) is the one the last
# make bench or make bench-quick wrote: results/latest/server-config.json.
# Ports 18080 and 18081 must be free.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 \"BIN_A BIN_B\" RATE [ROUNDS]" >&2; exit 2; }
bins=$1
rate=$2
rounds=${3:-6}
cpus=${CPUS-0}
cd "$(dirname "$0")/.."
cfg=$(pwd)/results/latest/server-config.json
[ -f "$cfg" ] || { echo "rest-ab: no $cfg: run make bench-quick first" >&2; exit 1; }
tok=$(sed -n 's/^ *"admin_token": *"\([^"]*\)".*/\1/p' "$cfg")
markets=BTCUSDT,ETHUSDT,SOLUSDT,BNBUSDT,XRPUSDT,DOGEUSDT,ADAUSDT,LTCUSDT
d=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$d"' EXIT
go build -buildvcs=false -o "$d/loadgen" ./bench/cmd/loadgen
gen() { "$d/loadgen" -addr 127.0.0.1:18080 -admin 127.0.0.1:18081 -admin-token "$tok" -users 100 -markets "$markets" -conns 128 "$@"; }
round=1
while [ "$round" -le "$rounds" ]; do
	order=$bins
	if [ $((round % 2)) -eq 0 ]; then
		order=$(echo "$bins" | awk '{for (i = NF; i > 0; i--) printf "%s ", $i}')
	fi
	for b in $order; do
		rm -rf "$d/data"
		"$b" ${cpus:+-cpus "$cpus"} -config "$cfg" -data "$d/data" -listen 127.0.0.1:18080 -admin-listen 127.0.0.1:18081 -admin-token "$tok" >"$d/server.log" 2>&1 &
		pid=$!
		until grep -q ready "$d/server.log" 2>/dev/null; do
			kill -0 "$pid" 2>/dev/null || { cat "$d/server.log" >&2; exit 1; }
			sleep 0.1
		done
		if [ -n "${WARM:-}" ]; then
			gen -populate 500 -rate "$WARM" -duration 5s -pause 500ms -lead 300ms >/dev/null 2>&1
		else
			gen -populate 500 -rate 15000 -duration 5s >/dev/null 2>&1
		fi
		c0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		m0=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat)
		res=$(gen -rate "$rate,$rate" -duration 8s 2>&1 | awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {r = sprintf("achieved %s p50 %s p99 %s p99.9 %s max %s", $2, $6, $7, $8, $9)} END {print r}')
		c1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		m1=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat)
		kill -INT "$pid"
		wait "$pid" 2>/dev/null || true
		pid=
		echo "$round $b $res ticks $((c1 - c0)) machine $((m1 - m0))"
	done
	round=$((round + 1))
done
