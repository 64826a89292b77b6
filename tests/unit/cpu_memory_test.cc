// The CPU backend sizes its KV pool from what the process may use: the host's MemAvailable, or a container's
// cgroup memory headroom (limit less usage; v2 memory.max / memory.current, v1 memory.limit_in_bytes /
// memory.usage_in_bytes; the tightest on the way to the root) when that is less. Read from synthetic cgroup
// trees, then for real: a child process moved into a new memory cgroup with a 512 MiB limit (where this
// machine lets the test make one; skipped otherwise) sizes its pool from that limit and refuses a pool that
// cannot fit, naming both figures.
#include "engine/backend/cpu/cpu_memory.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/cgroup.h"
#include "engine/bundle/model_bundle.h"
#include "engine/core/byte_size.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(CpuMemory, LimitFilesParse) {
  EXPECT_EQ(MemoryLimitFromCgroupText("8589934592\n"), 8 * kGiB);
  EXPECT_FALSE(MemoryLimitFromCgroupText("max\n").has_value());
  EXPECT_FALSE(MemoryLimitFromCgroupText("9223372036854771712").has_value()) << "v1's 'no limit'";
  EXPECT_FALSE(MemoryLimitFromCgroupText("").has_value());
  EXPECT_FALSE(MemoryLimitFromCgroupText("-1").has_value());
  EXPECT_EQ(DescribeBytes(3 * kGiB / 2), "1.50 GiB");
  EXPECT_EQ(DescribeBytes(256 << 20), "256.00 MiB");
  EXPECT_EQ(DescribeBytes(100), "100 bytes");
}

TEST(CpuMemory, CgroupV2TreeKeepsTheSmallestHeadroom) {
  testing::ScopedTempDir dir;
  const std::filesystem::path root = dir.path();
  Write(root / "proc/self/cgroup", "0::/kubepods/pod1/container\n");
  Write(root / "sys/fs/cgroup/kubepods/pod1/container/memory.max", "max\n");
  Write(root / "sys/fs/cgroup/kubepods/pod1/memory.max", std::to_string(8 * kGiB) + "\n");
  Write(root / "sys/fs/cgroup/kubepods/pod1/memory.current", std::to_string(2 * kGiB) + "\n");
  Write(root / "sys/fs/cgroup/kubepods/memory.max", std::to_string(64 * kGiB) + "\n");
  Write(root / "sys/fs/cgroup/kubepods/memory.current", std::to_string(60 * kGiB) + "\n");
  const std::optional<CgroupMemory> memory = ReadCgroupMemory(root.string());
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->limit_bytes, 64 * kGiB) << "the node-level cgroup leaves less (4 GiB) than the pod's (6 GiB)";
  EXPECT_EQ(memory->headroom_bytes, 4 * kGiB);
}

TEST(CpuMemory, CgroupV1AndNoLimitAtAll) {
  testing::ScopedTempDir dir;
  const std::filesystem::path root = dir.path();
  Write(root / "proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n");
  Write(root / "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", std::to_string(8 * kGiB) + "\n");
  Write(root / "sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  Write(root / "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  const std::optional<CgroupMemory> memory = ReadCgroupMemory(root.string());
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->limit_bytes, 8 * kGiB);
  EXPECT_EQ(memory->headroom_bytes, 7 * kGiB);
  Write(root / "proc/meminfo", "MemTotal: 1000000000 kB\nMemAvailable: 900000000 kB\n");
  EXPECT_EQ(*ReadMemAvailable(root.string()), int64_t{900000000} * 1024);

  testing::ScopedTempDir empty;
  EXPECT_FALSE(ReadCgroupMemory(empty.path()).has_value());
  EXPECT_FALSE(ReadMemAvailable(empty.path()).ok());
}

TEST(CpuMemory, TheBudgetIsTheSmallerAndSaysWhich) {
  const MemoryBudget contained = PlanMemoryBudget(400 * kGiB, CgroupMemory{8 * kGiB, 6 * kGiB});
  EXPECT_EQ(contained.bytes, static_cast<size_t>(6 * kGiB));
  EXPECT_EQ(contained.source, "cgroup memory limit 8.00 GiB less 2.00 GiB in use; host MemAvailable 400.00 GiB");
  const MemoryBudget host = PlanMemoryBudget(3 * kGiB, CgroupMemory{8 * kGiB, 6 * kGiB});
  EXPECT_EQ(host.bytes, static_cast<size_t>(3 * kGiB));
  EXPECT_EQ(host.source, "host MemAvailable; cgroup memory limit 8.00 GiB");
  EXPECT_EQ(PlanMemoryBudget(3 * kGiB, std::nullopt).source, "host MemAvailable; no cgroup memory limit");
}

// A new memory cgroup under this process's own, with `limit` bytes; removed when done. Empty when this machine
// does not let the test make one (no write access, a v2 tree without the memory controller delegated).
class RealMemoryCgroup {
 public:
  explicit RealMemoryCgroup(int64_t limit) {
    const std::vector<CgroupDir> dirs = CgroupDirs("/", "memory");
    if (dirs.empty()) return;
    const CgroupDir& own = dirs.front();
    const std::filesystem::path dir = own.path / absl::StrCat("arach-memory-test-", getpid());
    std::error_code error;
    if (!std::filesystem::create_directory(dir, error)) return;
    dir_ = dir;
    std::ofstream(dir / (own.v2 ? "memory.max" : "memory.limit_in_bytes")) << limit;
    const std::optional<int64_t> read_back = ReadInteger(dir / (own.v2 ? "memory.max" : "memory.limit_in_bytes"));
    usable_ = read_back.has_value() && *read_back == limit;
  }
  ~RealMemoryCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  bool usable() const { return usable_; }
  // Runs `body` in a child process moved into the cgroup; what it returns (at most 4 KiB of text).
  std::string RunInside(const std::function<std::string()>& body) const {
    int fds[2];
    if (pipe(fds) != 0) return "pipe failed";
    const pid_t child = fork();
    if (child == 0) {
      close(fds[0]);
      std::ofstream(dir_ / "cgroup.procs") << getpid() << std::endl;
      const std::string text = body();
      (void)!write(fds[1], text.data(), text.size());
      _exit(0);
    }
    close(fds[1]);
    std::string out;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    return out;
  }

 private:
  std::filesystem::path dir_;
  bool usable_ = false;
};

TEST(CpuMemory, ARealCgroupLimitSizesThePoolAndRefusesWhatCannotFit) {
  const std::string model = testing::TinyRandomModelDir();  // made before the fork
  constexpr int64_t kLimit = 512 << 20;
  RealMemoryCgroup cgroup(kLimit);
  if (!cgroup.usable()) GTEST_SKIP() << "this machine does not let the test make a memory cgroup (needs write access to its own)";
  const std::string seen = cgroup.RunInside([] {
    const std::optional<CgroupMemory> memory = ReadCgroupMemory();
    return memory ? absl::StrCat(memory->limit_bytes) : std::string("none");
  });
  EXPECT_EQ(seen, std::to_string(kLimit)) << "the child should see the new cgroup's limit";

  const std::string sized = cgroup.RunInside([&] {
    LoadModelOptions options;
    options.kv_memory_fraction = 0.5;
    absl::StatusOr<ModelBundle> bundle = LoadModelBundle(model, options);
    return bundle.ok() ? bundle->runner->kv_memory_note() : std::string(bundle.status().message());
  });
  EXPECT_THAT(sized, HasSubstr("available: cgroup memory limit 512.00 MiB less ")) << sized;

  const std::string refused = cgroup.RunInside([&] {
    LoadModelOptions options;
    options.kv_cache_bytes = 2 * kGiB;
    absl::StatusOr<ModelBundle> bundle = LoadModelBundle(model, options);
    return bundle.ok() ? std::string("loaded") : std::string(bundle.status().message());
  });
  EXPECT_THAT(refused, HasSubstr("does not fit beside the weights")) << refused;
  EXPECT_THAT(refused, HasSubstr("(2.00 GiB)")) << refused;
  EXPECT_THAT(refused, HasSubstr("available (cgroup memory limit 512.00 MiB less ")) << refused;
}

}  // namespace
}  // namespace arach
