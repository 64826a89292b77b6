// How much memory the CPU backend may still take (for the KV pool, once the weights are in): the host's
// MemAvailable, or less where the process's cgroup sets a memory limit below it. A container on a large node
// sees the node's memory in /proc/meminfo; sizing from that would let a pod with an 8 GiB limit plan a pool of
// hundreds of GiB and be killed. The cgroup's headroom is its limit (v2 memory.max, v1 memory.limit_in_bytes)
// less what it already uses (memory.current, memory.usage_in_bytes), the tightest on the way to the root.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/backend/backend.h"

namespace arach {

// The bytes a memory.max / memory.limit_in_bytes file sets; nullopt for "max", v1's "no limit" (a value near
// 2^63) or unreadable text.
std::optional<int64_t> MemoryLimitFromCgroupText(absl::string_view text);

// The tightest cgroup memory limit on the way from this process's cgroup to the root, and the headroom left
// under it (limit less usage; the smallest headroom of any limited level).
struct CgroupMemory {
  int64_t limit_bytes = 0;
  int64_t headroom_bytes = 0;
};
// Read under `root` ("/" in production; a test tree in tests, as cgroup.h describes); nullopt without a limit.
std::optional<CgroupMemory> ReadCgroupMemory(const std::string& root = "/");

// MemAvailable from root/proc/meminfo.
absl::StatusOr<int64_t> ReadMemAvailable(const std::string& root = "/");

// The smaller of the host's MemAvailable and the cgroup's headroom, saying which it is.
MemoryBudget PlanMemoryBudget(int64_t mem_available, std::optional<CgroupMemory> cgroup);

}  // namespace arach
