#include "engine/backend/cpu/cpu_threads.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/backend/cpu/cgroup.h"

namespace arach {
namespace {

void KeepTightest(std::optional<double> candidate, std::optional<double>* tightest) {
  if (candidate && (!*tightest || *candidate < **tightest)) *tightest = candidate;
}

}  // namespace

std::optional<double> CpusFromCgroupV2(absl::string_view cpu_max) {
  const std::vector<std::string> parts = absl::StrSplit(absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipEmpty());
  if (parts.empty() || parts[0] == "max") return std::nullopt;
  int64_t quota = 0, period = 100000;
  if (!absl::SimpleAtoi(parts[0], &quota)) return std::nullopt;
  if (parts.size() > 1 && !absl::SimpleAtoi(parts[1], &period)) return std::nullopt;
  return CpusFromCgroupV1(quota, period);
}

std::optional<double> CpusFromCgroupV1(int64_t quota_us, int64_t period_us) {
  if (quota_us <= 0 || period_us <= 0) return std::nullopt;
  return static_cast<double>(quota_us) / static_cast<double>(period_us);
}

CpuThreadPlan PlanCpuThreads(int affinity_cpus, std::optional<double> quota_cpus, int requested) {
  CpuThreadPlan plan;
  affinity_cpus = std::max(1, affinity_cpus);
  if (requested > 0) {
    plan.threads = requested;
    plan.reason = absl::StrCat("--cpu_threads ", requested, " (", affinity_cpus, " CPUs in the affinity mask)");
    return plan;
  }
  if (quota_cpus && *quota_cpus < affinity_cpus) {
    plan.threads = std::max(1, static_cast<int>(std::floor(*quota_cpus)));
    plan.reason = absl::StrFormat("cgroup CPU quota %.2f CPUs (of %d in the affinity mask)", *quota_cpus, affinity_cpus);
    return plan;
  }
  plan.threads = affinity_cpus;
  plan.reason = absl::StrCat(affinity_cpus, " CPUs in the affinity mask", quota_cpus ? " (the cgroup quota allows them)" : "");
  return plan;
}

std::optional<double> ReadCgroupCpuQuota(const std::string& root) {
  std::optional<double> tightest;
  for (const CgroupDir& dir : CgroupDirs(root, "cpu")) {
    if (dir.v2) {
      if (const std::optional<std::string> text = ReadSmallFile(dir.path / "cpu.max"); text) KeepTightest(CpusFromCgroupV2(*text), &tightest);
      continue;
    }
    const std::optional<int64_t> quota = ReadInteger(dir.path / "cpu.cfs_quota_us");
    const std::optional<int64_t> period = ReadInteger(dir.path / "cpu.cfs_period_us");
    if (quota && period) KeepTightest(CpusFromCgroupV1(*quota, *period), &tightest);
  }
  return tightest;
}

CpuThreadPlan DetectCpuThreads(int requested) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int affinity = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) affinity = CPU_COUNT(&set);
  int from_env = 0;
  if (const char* env = std::getenv("OMP_NUM_THREADS"); requested <= 0 && env != nullptr && absl::SimpleAtoi(env, &from_env) &&
                                                        from_env > 0) {
    return CpuThreadPlan{from_env, absl::StrCat("OMP_NUM_THREADS=", from_env)};
  }
  return PlanCpuThreads(affinity, ReadCgroupCpuQuota(), requested);
}

}  // namespace arach
