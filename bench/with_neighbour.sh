#!/usr/bin/env bash
# Runs a benchmark command beside a neighbour that competes for the CPU, the way a shared node or a pod with a CPU
# limit below the node's cores does:
#   bench/with_neighbour.sh idle    -- COMMAND...   no neighbour
#   bench/with_neighbour.sh busy    -- COMMAND...   one thread in a busy loop
#   bench/with_neighbour.sh replica -- COMMAND...   a second copy of COMMAND at the same time (two replicas)
#   bench/with_neighbour.sh omp2    -- COMMAND...   a two-thread OpenMP job spinning in its barriers (PyTorch-like)
#   bench/with_neighbour.sh pinned  -- COMMAND...   COMMAND alone on core 0 (taskset -c 0)
#   bench/with_neighbour.sh cgroup  -- COMMAND...   COMMAND in a cgroup whose CPU quota is one CPU (a pod with
#                                                    `limits: cpu: 1` on a larger node); needs a writable cgroupfs
#                                                    (cgroup v2 with the cpu controller, else the v1 cpu hierarchy)
# The neighbour runs for the whole command and is stopped after it. BUILD_DIR locates omp_spinner.
set -euo pipefail
kind=${1:?idle|busy|replica|omp2|pinned|cgroup}
shift
[ "${1:-}" = "--" ] && shift
build=${BUILD_DIR:-build}
neighbour=""
case "$kind" in
  idle) ;;
  busy) bash -c 'while :; do :; done' & neighbour=$! ;;
  replica) "$@" > /dev/null 2>&1 & neighbour=$! ;;
  omp2) OMP_WAIT_POLICY=active "$build/bench/omp_spinner" 3600 > /dev/null & neighbour=$! ;;
  pinned) exec taskset -c 0 "$@" ;;
  cgroup)
    dir=""
    if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
      dir=/sys/fs/cgroup/arach-bench-$$
      mkdir "$dir" && echo "100000 100000" > "$dir/cpu.max" || dir=""
    elif [ -d /sys/fs/cgroup/cpu ]; then
      dir=/sys/fs/cgroup/cpu/arach-bench-$$
      mkdir "$dir" && echo 100000 > "$dir/cpu.cfs_period_us" && echo 100000 > "$dir/cpu.cfs_quota_us" || dir=""
    fi
    if [ -z "$dir" ]; then
      echo "cannot create a CPU-limited cgroup here (read-only cgroupfs or no cpu controller)" >&2
      exit 3
    fi
    trap 'rmdir "$dir" 2>/dev/null || true' EXIT
    bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$dir" "$@"
    exit $?
    ;;
  *) echo "unknown neighbour '$kind'" >&2; exit 2 ;;
esac
trap '[ -n "$neighbour" ] && kill "$neighbour" 2>/dev/null; wait 2>/dev/null || true' EXIT
sleep 0.3
"$@"
