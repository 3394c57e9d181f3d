#!/usr/bin/env bash
# A 3-master Redis Cluster on loopback ports, for the tests that run
# against a cluster (SLUICE_TEST_REDIS_CLUSTER) and for trying sluice on one.
#
#   .ci/redis-cluster.sh start [dir]   start it; prints the line to eval:
#                                      export SLUICE_TEST_REDIS_CLUSTER=redis+cluster://127.0.0.1:P1,...
#   .ci/redis-cluster.sh stop [dir]    stop it and remove dir
#
# dir (default ${TMPDIR:-/tmp}/sluice-redis-cluster) holds each node's
# cluster config, log and pid. No persistence. Needs Debian's redis-server
# and redis-cli (apt-get install redis-server) and python3 (free ports).
set -euo pipefail
cmd=${1:-}
dir=${2:-${TMPDIR:-/tmp}/sluice-redis-cluster}

stop() {
  [ -d "$dir" ] || return 0
  for pidfile in "$dir"/node-*/pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$dir"
}

# free_port prints a loopback port that is free along with port+10000 (the
# node's cluster bus).
free_port() {
  python3 - <<'EOF'
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p + 10000 > 65535:
        s.close(); continue
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 10000))
    except OSError:
        s.close(); b.close(); continue
    s.close(); b.close(); print(p); break
EOF
}

start() {
  [ ! -e "$dir" ] || { echo "redis-cluster.sh: $dir exists: stop the cluster first (.ci/redis-cluster.sh stop $dir)" >&2; exit 1; }
  mkdir -p "$dir"
  nodes=()
  for i in 1 2 3; do
    port=$(free_port)
    d="$dir/node-$i"
    mkdir -p "$d"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$d" \
      --cluster-enabled yes --cluster-config-file "$d/nodes.conf" --cluster-node-timeout 5000 \
      --save "" --appendonly no --daemonize yes --pidfile "$d/pid" --logfile "$d/log" >/dev/null
    for _ in $(seq 50); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
    redis-cli -p "$port" ping | grep -q PONG || { echo "redis-cluster.sh: node on $port does not answer" >&2; stop; exit 1; }
    nodes+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 ||
    { cat "$dir/create.log" >&2; stop; exit 1; }
  ok=
  for _ in $(seq 100); do
    ok=1
    for n in "${nodes[@]}"; do
      redis-cli -p "${n##*:}" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || ok=
    done
    [ -n "$ok" ] && break
    sleep 0.1
  done
  [ -n "$ok" ] || { echo "redis-cluster.sh: cluster_state is not ok after 10s" >&2; stop; exit 1; }
  (IFS=,; echo "export SLUICE_TEST_REDIS_CLUSTER=redis+cluster://${nodes[*]}")
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop [dir]" >&2; exit 2 ;;
esac
