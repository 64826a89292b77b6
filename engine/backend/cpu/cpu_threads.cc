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

namespace arach {
namespace {

std::optional<std::string> ReadSmallFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<int64_t> ReadInteger(const std::filesystem::path& path) {
  const std::optional<std::string> text = ReadSmallFile(path);
  int64_t value = 0;
  if (!text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) return std::nullopt;
  return value;
}

void KeepTightest(std::optional<double> candidate, std::optional<double>* tightest) {
  if (candidate && (!*tightest || *candidate < **tightest)) *tightest = candidate;
}

// `dir` and each of its parents up to `top` (inclusive).
std::vector<std::filesystem::path> SelfAndParents(std::filesystem::path dir, const std::filesystem::path& top) {
  std::vector<std::filesystem::path> out;
  while (true) {
    out.push_back(dir);
    if (dir == top || !dir.has_relative_path() || dir.string().size() <= top.string().size()) break;
    dir = dir.parent_path();
  }
  return out;
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
  const std::filesystem::path base(root);
  const std::optional<std::string> membership = ReadSmallFile(base / "proc/self/cgroup");
  if (!membership) return std::nullopt;
  const std::filesystem::path fs = base / "sys/fs/cgroup";
  std::optional<double> tightest;
  for (absl::string_view line : absl::StrSplit(*membership, '\n', absl::SkipEmpty())) {
    // hierarchy-id:controllers:path ("0::/kubepods/pod1" for v2, "4:cpu,cpuacct:/docker/abc" for v1)
    const std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    const std::string relative = std::string(absl::StripPrefix(fields[2], "/"));
    if (fields[0] == "0" && fields[1].empty()) {
      for (const std::filesystem::path& dir : SelfAndParents(fs / relative, fs)) {
        if (const std::optional<std::string> text = ReadSmallFile(dir / "cpu.max"); text) KeepTightest(CpusFromCgroupV2(*text), &tightest);
      }
      continue;
    }
    const std::vector<std::string> controllers = absl::StrSplit(fields[1], ',');
    if (std::find(controllers.begin(), controllers.end(), "cpu") == controllers.end()) continue;
    for (const std::string& mount : {fields[1], std::string("cpu"), std::string("cpu,cpuacct")}) {
      const std::filesystem::path hierarchy = fs / mount;
      if (!std::filesystem::exists(hierarchy)) continue;
      for (const std::filesystem::path& dir : SelfAndParents(hierarchy / relative, hierarchy)) {
        const std::optional<int64_t> quota = ReadInteger(dir / "cpu.cfs_quota_us");
        const std::optional<int64_t> period = ReadInteger(dir / "cpu.cfs_period_us");
        if (quota && period) KeepTightest(CpusFromCgroupV1(*quota, *period), &tightest);
      }
      break;
    }
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
