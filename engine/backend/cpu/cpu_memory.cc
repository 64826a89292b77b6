#include "engine/backend/cpu/cpu_memory.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/backend/cpu/cgroup.h"
#include "engine/core/byte_size.h"

namespace arach {

std::optional<int64_t> MemoryLimitFromCgroupText(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  int64_t bytes = 0;
  if (text == "max" || !absl::SimpleAtoi(text, &bytes) || bytes <= 0) return std::nullopt;
  if (bytes >= (int64_t{1} << 62)) return std::nullopt;  // v1 writes "no limit" as PAGE_COUNTER_MAX pages in bytes
  return bytes;
}

std::optional<CgroupMemory> ReadCgroupMemory(const std::string& root) {
  std::optional<CgroupMemory> tightest;
  for (const CgroupDir& dir : CgroupDirs(root, "memory")) {
    const std::optional<std::string> limit_text = ReadSmallFile(dir.path / (dir.v2 ? "memory.max" : "memory.limit_in_bytes"));
    if (!limit_text) continue;
    const std::optional<int64_t> limit = MemoryLimitFromCgroupText(*limit_text);
    if (!limit) continue;
    const int64_t usage = ReadInteger(dir.path / (dir.v2 ? "memory.current" : "memory.usage_in_bytes")).value_or(0);
    const CgroupMemory here{*limit, std::max<int64_t>(0, *limit - usage)};
    if (!tightest || here.headroom_bytes < tightest->headroom_bytes) tightest = here;
  }
  return tightest;
}

absl::StatusOr<int64_t> ReadMemAvailable(const std::string& root) {
  std::ifstream meminfo(std::filesystem::path(root) / "proc/meminfo");
  std::string key, unit;
  int64_t kib = 0;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return absl::UnavailableError("cpu: /proc/meminfo has no MemAvailable");
}

MemoryBudget PlanMemoryBudget(int64_t mem_available, std::optional<CgroupMemory> cgroup) {
  if (cgroup && cgroup->headroom_bytes < mem_available) {
    return {static_cast<size_t>(cgroup->headroom_bytes),
            absl::StrCat("cgroup memory limit ", DescribeBytes(cgroup->limit_bytes), " less ",
                         DescribeBytes(cgroup->limit_bytes - cgroup->headroom_bytes), " in use; host MemAvailable ",
                         DescribeBytes(mem_available))};
  }
  return {static_cast<size_t>(mem_available),
          absl::StrCat("host MemAvailable; ", cgroup ? absl::StrCat("cgroup memory limit ", DescribeBytes(cgroup->limit_bytes))
                                                     : std::string("no cgroup memory limit"))};
}

}  // namespace arach
