// The cgroups this process lives in, read from /proc/self/cgroup and /sys/fs/cgroup, for the limits a container
// sets below what the node has: the CPU quota (cpu_threads.h) and the memory limit (cpu_memory.h). Both
// hierarchies: v2 (one tree, "0::/path") and v1 (a tree per controller, "4:cpu,cpuacct:/path"). A limit set
// on a parent applies too, so readers walk from the process's cgroup up to the root and keep the tightest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace arach {

// One cgroup folder on the way from the process's cgroup to the root.
struct CgroupDir {
  std::filesystem::path path;
  bool v2 = false;  // a unified (v2) folder: cpu.max, memory.max; else v1: cpu.cfs_*, memory.limit_in_bytes
};

// The folders of this process's cgroups for the v1 `controller` ("cpu", "memory") and of its v2 cgroup, each
// from the process's own up to the hierarchy's root, read under `root` ("/" in production; a test tree in
// tests: root/proc/self/cgroup names the cgroups, root/sys/fs/cgroup holds them).
std::vector<CgroupDir> CgroupDirs(const std::string& root, absl::string_view controller);

// A small file's text / its integer value; nullopt when it cannot be read.
std::optional<std::string> ReadSmallFile(const std::filesystem::path& path);
std::optional<int64_t> ReadInteger(const std::filesystem::path& path);

}  // namespace arach
