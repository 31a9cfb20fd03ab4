#!/usr/bin/env bash
# Starts a three-node replicated group on loopback with the embedded demo
# config (docs/REPLICATION.md; make run-cluster):
#
#   node  REST             admin            raft
#   1     127.0.0.1:8080   127.0.0.1:8081   127.0.0.1:9101
#   2     127.0.0.1:8082   127.0.0.1:8083   127.0.0.1:9102
#   3     127.0.0.1:8084   127.0.0.1:8085   127.0.0.1:9103
#
# Data in ./data-cluster/N, logs in ./data-cluster/N.log. Each node runs
# under a small supervisor loop that restarts it when it exits with 75
# (a deposed leader rebuilding from the committed log). Ctrl-C stops all.
set -u
BIN=${BIN:-bin/exchanged}
DIR=${DIR:-data-cluster}
export EXCHANGED_REPLICA_SECRET=${EXCHANGED_REPLICA_SECRET:-demo-cluster-secret-change-me}
PEERS=1=127.0.0.1:9101,2=127.0.0.1:9102,3=127.0.0.1:9103
REST=1=127.0.0.1:8080,2=127.0.0.1:8082,3=127.0.0.1:8084
mkdir -p "$DIR"
pids=()
for n in 1 2 3; do
	rest=$((8078 + 2 * n)) admin=$((8079 + 2 * n))
	(
		child=
		trap '[ -n "$child" ] && kill -TERM $child 2>/dev/null; wait; exit 0' TERM
		while :; do
			"$BIN" -data "$DIR/$n" -listen 127.0.0.1:$rest -admin-listen 127.0.0.1:$admin \
				-node-id $n -peers $PEERS -peer-rest $REST >>"$DIR/$n.log" 2>&1 &
			child=$!
			wait $child
			st=$?
			[ $st -eq 75 ] || { echo "node $n exited with $st (see $DIR/$n.log)"; exit $st; }
			echo "node $n deposed: restarting"
		done
	) &
	pids+=($!)
	echo "node $n: REST http://127.0.0.1:$rest  admin http://127.0.0.1:$admin  log $DIR/$n.log"
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; exit 0' INT TERM
echo "watch: curl -s -H 'X-Admin-Token: change-me' http://127.0.0.1:8081/metrics | grep exchanged_replica_"
wait
