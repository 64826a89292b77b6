#!/usr/bin/env bash
# A local fleet: N arach-server replicas on this machine behind HAProxy (Debian's haproxy), as an operator
# would run them without Kubernetes. HAProxy speaks HTTP/1.1 to the replicas' OpenAI API and gRPC over
# HTTP/2 to their gRPC ports, checks GET /ready on each every 250 ms, balances by least outstanding requests
# (the closest local stand-in for the Inference Extension's endpoint picker) and retries elsewhere a request
# that found a refused connection or a 503 (a draining replica). Every replica reads the same experiment
# file, so a key's A/B arm is the same whichever replica answers. Replica I is named rI (--replica_name): a stored
# response's id names it, and HAProxy sends the turns that continue or read it there. Replicas drain on SIGTERM as lame ducks
# (--drain_announce_ms, above HAProxy's 2 x 250 ms to notice) before refusing anything.
#
#   scripts/fleet.sh [up] --model DIR [--replicas N] [-- SERVER_FLAGS...]
#                              starts the fleet in $FLEET_DIR and prints where to reach it; `up` returns at
#                              once, no subcommand waits for Ctrl-C and then stops the fleet
#   scripts/fleet.sh restart I  SIGTERM replica I, wait for its drain, start it again on the same ports, wait
#                              until it is ready (prints the drain line of its log)
#   scripts/fleet.sh kill I     SIGKILL replica I (no drain)
#   scripts/fleet.sh start I    start replica I again (after kill)
#   scripts/fleet.sh status     replicas and what HAProxy thinks of them
#   scripts/fleet.sh down       stop everything
# Environment: FLEET_DIR (default /tmp/arach-fleet), FLEET_BASE_PORT (default 18000: HAProxy takes
# BASE (gRPC) and BASE+1 (HTTP), replica I BASE+10+2I (gRPC) and BASE+11+2I (HTTP), its stats page BASE+2),
# ARACH_SERVER (default build/server/arach-server), EXPERIMENT (a file; default deploy/k8s/base/experiment.json).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${FLEET_DIR:-/tmp/arach-fleet}
base=${FLEET_BASE_PORT:-18000}
server=${ARACH_SERVER:-$root/build/server/arach-server}

die() { echo "[fleet] $*" >&2; exit 1; }
grpc_port() { echo $((base + 10 + 2 * $1)); }
http_port() { echo $((base + 11 + 2 * $1)); }
replicas() { cat "$dir/replicas"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Alive and not a zombie (an orphaned replica whose reaper has not come yet counts as gone).
running() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

wait_ready() {  # replica index; up to 120 s
  local i=$1 pid
  pid=$(cat "$dir/replica-$i.pid")
  for _ in $(seq 1200); do
    if curl -sf "http://127.0.0.1:$(http_port "$i")/ready" >/dev/null 2>&1; then return 0; fi
    running "$pid" || { tail -20 "$dir/replica-$i.log" >&2; die "replica $i exited while starting"; }
    sleep 0.1
  done
  die "replica $i not ready in 120 s (log: $dir/replica-$i.log)"
}

start_replica() {
  local i=$1
  local args=()
  mapfile -t args < "$dir/server-args"
  # The log is appended to, so that a restarted replica's drain stays readable after it.
  "$server" --listen "127.0.0.1:$(grpc_port "$i")" --http_listen "127.0.0.1:$(http_port "$i")" --replica_name "r$i" "${args[@]}" \
    >> "$dir/replica-$i.log" 2>&1 &
  echo $! > "$dir/replica-$i.pid"
}

write_haproxy_config() {
  local n=$1
  {
    cat <<EOF
global
  log stderr format short local0 notice
  maxconn 4096
  tune.bufsize 131072
defaults
  mode http
  log global
  option httplog
  timeout connect 2s
  timeout client 300s
  timeout server 300s
  timeout http-keep-alive 10s
  # A request that found a refused connection, an empty answer or a 503 (a draining replica) goes to another
  # replica; nothing that reached an engine is retried (a 200 stream is never replayed).
  retries 3
  retry-on conn-failure empty-response 503
  option redispatch 1
  default-server inter 250ms fastinter 250ms downinter 500ms fall 2 rise 1
frontend openai
  bind 127.0.0.1:$((base + 1))
  # A Responses API turn that continues a stored response (previous_response_id; its input token count too) and the
  # routes that read one (/v1/responses/ID...) go to the replica that holds it, named in the id (resp_NAME_...:
  # --replica_name). The body is read up to tune.bufsize (128 KiB) for that; past it such a turn may reach another
  # replica (404).
  option http-buffer-request
  http-request set-var(txn.replica) req.body,json_query('\$.previous_response_id'),field(2,_) if { method POST } { path /v1/responses /v1/responses/input_tokens }
  http-request set-var(txn.replica) path,field(4,/),field(2,_) if { path_beg /v1/responses/ } !{ path /v1/responses/input_tokens }
  default_backend replicas_http
frontend grpc
  bind 127.0.0.1:$base proto h2
  default_backend replicas_grpc
listen stats
  bind 127.0.0.1:$((base + 2))
  stats enable
  stats uri /
  stats refresh 1s
backend replicas_http
  balance leastconn
  # A connection to a replica serves one client connection only: a request never lands on an idle
  # connection whose replica has just died (a POST there could not be retried; a new connect is).
  http-reuse never
  option httpchk
  http-check send meth GET uri /ready
  http-check expect status 200
EOF
    for i in $(seq 0 $((n - 1))); do
      echo "  server r$i 127.0.0.1:$(http_port "$i") check"
      echo "  use-server r$i if { var(txn.replica) -m str r$i }"
    done
    cat <<EOF
backend replicas_grpc
  balance leastconn
  option httpchk
  http-check send meth GET uri /ready
  http-check expect status 200
EOF
    for i in $(seq 0 $((n - 1))); do
      echo "  server r$i 127.0.0.1:$(grpc_port "$i") proto h2 check port $(http_port "$i") check-proto h1"
    done
  } > "$dir/haproxy.cfg"
}

up() {
  local model="" n=3
  while [ $# -gt 0 ]; do
    case "$1" in
      --model) model=$2; shift 2 ;;
      --replicas) n=$2; shift 2 ;;
      --) shift; break ;;
      *) die "unknown argument $1 (see the top of scripts/fleet.sh)" ;;
    esac
  done
  [ -n "$model" ] || die "--model DIR is required"
  model=$(cd "$model" && pwd) || die "no model folder $model"
  command -v haproxy >/dev/null || die "haproxy not found (apt-get install haproxy)"
  [ -x "$server" ] || die "$server not found: build first (scripts/build.sh) or set ARACH_SERVER"
  [ ! -f "$dir/haproxy.pid" ] || die "a fleet already runs in $dir (scripts/fleet.sh down)"
  mkdir -p "$dir"
  rm -f "$dir"/replica-*.log
  echo "$n" > "$dir/replicas"
  local experiment=${EXPERIMENT:-$root/deploy/k8s/base/experiment.json}
  printf '%s\n' --model "$model" --experiment_file "$experiment" --drain_announce_ms 1000 --drain_grace_seconds 60 \
    --kv_cache_bytes 67108864 "$@" > "$dir/server-args"
  for i in $(seq 0 $((n - 1))); do start_replica "$i"; done
  for i in $(seq 0 $((n - 1))); do wait_ready "$i"; done
  write_haproxy_config "$n"
  haproxy -c -q -f "$dir/haproxy.cfg" || die "HAProxy refuses $dir/haproxy.cfg"
  haproxy -f "$dir/haproxy.cfg" > "$dir/haproxy.log" 2>&1 &
  echo $! > "$dir/haproxy.pid"
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$((base + 1))/ready" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$((base + 1))/ready" >/dev/null || die "HAProxy does not answer (log: $dir/haproxy.log)"
  echo "[fleet] $n replicas behind HAProxy: OpenAI API http://127.0.0.1:$((base + 1))/v1, gRPC 127.0.0.1:$base," \
       "HAProxy stats http://127.0.0.1:$((base + 2))/, logs in $dir"
}

stop_replica() {  # index signal
  local i=$1 signal=$2 pid
  pid=$(cat "$dir/replica-$i.pid" 2>/dev/null) || return 0
  kill "-$signal" "$pid" 2>/dev/null || true
  while running "$pid"; do sleep 0.05; done
  rm -f "$dir/replica-$i.pid"
}

down() {
  [ -d "$dir" ] || return 0
  if [ -f "$dir/haproxy.pid" ]; then kill "$(cat "$dir/haproxy.pid")" 2>/dev/null || true; rm -f "$dir/haproxy.pid"; fi
  if [ -f "$dir/replicas" ]; then
    for i in $(seq 0 $(($(replicas) - 1))); do stop_replica "$i" TERM; done
  fi
  echo "[fleet] stopped"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  restart)
    i=${2:?replica index}
    t0=$(now_ms)
    stop_replica "$i" TERM
    t1=$(now_ms)
    grep "arach-server stopped" "$dir/replica-$i.log" | tail -1
    start_replica "$i"
    wait_ready "$i"
    echo "[fleet] replica $i: drained in $((t1 - t0)) ms, ready again $(($(now_ms) - t1)) ms later"
    ;;
  kill) stop_replica "${2:?replica index}" KILL ;;
  start) start_replica "${2:?replica index}"; wait_ready "$2" ;;
  status)
    for i in $(seq 0 $(($(replicas) - 1))); do
      printf 'replica %s grpc=127.0.0.1:%s http=127.0.0.1:%s ready=%s\n' "$i" "$(grpc_port "$i")" "$(http_port "$i")" \
        "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(http_port "$i")/ready" || true)"
    done
    curl -s "http://127.0.0.1:$((base + 2))/;csv" | cut -d, -f1,2,18 | grep -v "^#" || true
    ;;
  down) down ;;
  *)
    up "$@"
    trap down EXIT INT TERM
    echo "[fleet] Ctrl-C stops it"
    wait "$(cat "$dir/haproxy.pid")" || true
    ;;
esac
