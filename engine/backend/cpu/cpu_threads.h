// How many threads the CPU backend runs: what the process may really use, not the node's core count. A pod
// whose CPU limit is below the node's cores, or a process pinned to a few cores, sees every core through
// nproc / omp_get_num_procs; running that many threads leaves some descheduled, and every parallel region's
// barrier then waits a scheduler slice for them. The team is sized from the CPU affinity mask and the cgroup
// CPU quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, the tightest on the way to the root),
// rounded down, at least one; an explicit count overrides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

namespace arach {

struct CpuThreadPlan {
  int threads = 1;
  std::string reason;  // e.g. "cgroup quota 1.5 CPUs (of 8 in the affinity mask)"
};

// CPUs a cgroup v2 `cpu.max` file grants ("150000 100000" -> 1.5); nullopt for "max ..." or unreadable text.
std::optional<double> CpusFromCgroupV2(absl::string_view cpu_max);
// CPUs a cgroup v1 quota grants (quota -1: none).
std::optional<double> CpusFromCgroupV1(int64_t quota_us, int64_t period_us);

// The plan for `affinity_cpus` usable CPUs and a quota of `quota_cpus` (none: no quota); `requested` > 0 wins.
CpuThreadPlan PlanCpuThreads(int affinity_cpus, std::optional<double> quota_cpus, int requested);

// The tightest CPU quota of this process's cgroups, read under `root` ("/" in production; a test tree in tests):
// root/proc/self/cgroup names the cgroups, root/sys/fs/cgroup holds them.
std::optional<double> ReadCgroupCpuQuota(const std::string& root = "/");

// The plan for this process: `requested` when > 0, else OMP_NUM_THREADS when set, else from sched_getaffinity
// and ReadCgroupCpuQuota.
CpuThreadPlan DetectCpuThreads(int requested);

}  // namespace arach
