#!/bin/sh
# pgo.sh: regenerate cmd/exchanged/default.pgo, the CPU profile the server is
# built with (profile-guided optimization: `go build ./cmd/exchanged` picks it
# up by itself, and `make bench` passes it to its go test benchmarks so they
# measure the code as the server runs it).
#
# The profile merges two runs of the code built without it:
#   - the server on its embedded config (BTCUSDT, ETHUSDT; rate limits off)
#     under the load generator: signed REST orders and cancels at RATE/s for
#     DUR;
#   - BenchmarkMixed, the engine's mixed stream over a 10k-order book, which
#     holds more trading (fills, crossing orders) than the REST mix does.
#
# usage: bench/pgo.sh            (RATE=10000 DUR=60s; 74 s here)
# Regenerate it after large changes to the hot paths; a stale profile still
# builds (Go matches it by function), it only guides less.
set -eu
rate=${RATE:-10000}
dur=${DUR:-60s}
cd "$(dirname "$0")/.."
GOAMD64=${GOAMD64:-$(tools/goamd64.sh)} # as the Makefile builds
export GOAMD64
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
go build -pgo=off -o "$d/exchanged" ./cmd/exchanged
go build -o "$d/loadgen" ./bench/cmd/loadgen
sed 's/"enabled": true/"enabled": false/' edge/default.json >"$d/config.json"
grep -q '"enabled": false' "$d/config.json"
"$d/exchanged" -config "$d/config.json" -data "$d/data" -listen 127.0.0.1:18480 -admin-listen 127.0.0.1:18481 \
	-cpuprofile "$d/server.prof" >"$d/server.log" 2>&1 &
pid=$!
i=0
until grep -q ready "$d/server.log"; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		cat "$d/server.log" >&2
		kill $pid
		exit 1
	fi
	sleep 0.1
done
"$d/loadgen" -addr 127.0.0.1:18480 -admin 127.0.0.1:18481 -admin-token change-me \
	-users 100 -populate 200 -markets BTCUSDT,ETHUSDT -rate "$rate" -duration "$dur" -conns 64 |
	grep -v ' t=' | tail -n 2
kill -TERM $pid
wait $pid
go test -pgo=off -run '^$' -bench 'Mixed$' -benchtime 20000000x -cpuprofile "$d/engine.prof" \
	-o "$d/engine.test" ./engine/ | grep Mixed
go tool pprof -proto "$d/server.prof" "$d/engine.prof" >cmd/exchanged/default.pgo
echo "pgo: wrote cmd/exchanged/default.pgo ($(wc -c <cmd/exchanged/default.pgo) bytes)"
