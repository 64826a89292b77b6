#include "engine/backend/cpu/cgroup.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace arach {
namespace {

// `dir` and each of its parents up to `top` (inclusive).
void AddSelfAndParents(std::filesystem::path dir, const std::filesystem::path& top, bool v2, std::vector<CgroupDir>& out) {
  while (true) {
    out.push_back({dir, v2});
    if (dir == top || !dir.has_relative_path() || dir.string().size() <= top.string().size()) break;
    dir = dir.parent_path();
  }
}

}  // namespace

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

std::vector<CgroupDir> CgroupDirs(const std::string& root, absl::string_view controller) {
  std::vector<CgroupDir> out;
  const std::filesystem::path base(root);
  const std::optional<std::string> membership = ReadSmallFile(base / "proc/self/cgroup");
  if (!membership) return out;
  const std::filesystem::path fs = base / "sys/fs/cgroup";
  for (absl::string_view line : absl::StrSplit(*membership, '\n', absl::SkipEmpty())) {
    // hierarchy-id:controllers:path ("0::/kubepods/pod1" for v2, "4:cpu,cpuacct:/docker/abc" for v1)
    const std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    const std::string relative = std::string(absl::StripPrefix(fields[2], "/"));
    if (fields[0] == "0" && fields[1].empty()) {
      // On a v1 host the v2 tree may be mounted apart (unified/), with no controller files: harmless.
      AddSelfAndParents(fs / relative, fs, /*v2=*/true, out);
      continue;
    }
    const std::vector<std::string> controllers = absl::StrSplit(fields[1], ',');
    if (std::find(controllers.begin(), controllers.end(), controller) == controllers.end()) continue;
    for (const std::string& mount : {fields[1], std::string(controller), std::string("cpu,cpuacct")}) {
      const std::filesystem::path hierarchy = fs / mount;
      if (!std::filesystem::exists(hierarchy)) continue;
      AddSelfAndParents(hierarchy / relative, hierarchy, /*v2=*/false, out);
      break;
    }
  }
  return out;
}

}  // namespace arach
