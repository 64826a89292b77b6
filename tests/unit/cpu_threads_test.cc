// The CPU backend's thread count follows what the process may use: the affinity mask and the cgroup CPU
// quota (v2 cpu.max, v1 cfs quota/period; the tightest on the way up), read from synthetic cgroup trees.
#include "engine/backend/cpu/cpu_threads.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(CpuThreads, QuotaFilesParse) {
  EXPECT_EQ(CpusFromCgroupV2("150000 100000\n"), 1.5);
  EXPECT_EQ(CpusFromCgroupV2("200000"), 2.0) << "the period defaults to 100 ms";
  EXPECT_FALSE(CpusFromCgroupV2("max 100000").has_value());
  EXPECT_FALSE(CpusFromCgroupV2("garbage").has_value());
  EXPECT_EQ(CpusFromCgroupV1(50000, 100000), 0.5);
  EXPECT_FALSE(CpusFromCgroupV1(-1, 100000).has_value());
}

TEST(CpuThreads, ThePlanTakesTheTightestLimit) {
  EXPECT_EQ(PlanCpuThreads(8, std::nullopt, 0).threads, 8);
  EXPECT_EQ(PlanCpuThreads(8, 1.5, 0).threads, 1) << "rounded down";
  EXPECT_EQ(PlanCpuThreads(8, 0.2, 0).threads, 1) << "at least one";
  EXPECT_EQ(PlanCpuThreads(2, 4.0, 0).threads, 2) << "the affinity mask is tighter";
  EXPECT_EQ(PlanCpuThreads(8, 2.0, 6).threads, 6) << "an explicit count wins";
  EXPECT_EQ(PlanCpuThreads(8, 2.5, 0).reason, "cgroup CPU quota 2.50 CPUs (of 8 in the affinity mask)");
}

TEST(CpuThreads, CgroupV2TreeIsReadUpToTheRoot) {
  testing::ScopedTempDir dir;
  const std::filesystem::path root(dir.path());
  Write(root / "proc/self/cgroup", "0::/kubepods/burstable/pod1/container\n");
  Write(root / "sys/fs/cgroup/kubepods/burstable/pod1/container/cpu.max", "max 100000\n");
  Write(root / "sys/fs/cgroup/kubepods/burstable/pod1/cpu.max", "250000 100000\n");
  Write(root / "sys/fs/cgroup/kubepods/cpu.max", "800000 100000\n");
  EXPECT_EQ(ReadCgroupCpuQuota(root.string()), 2.5) << "the pod's limit, the tightest on the way up";
}

TEST(CpuThreads, CgroupV1QuotaAndNoCgroupAtAll) {
  testing::ScopedTempDir dir;
  const std::filesystem::path root(dir.path());
  Write(root / "proc/self/cgroup", "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(ReadCgroupCpuQuota(root.string()), 1.5);
  testing::ScopedTempDir empty;
  EXPECT_FALSE(ReadCgroupCpuQuota(empty.path()).has_value());
  EXPECT_GE(DetectCpuThreads(0).threads, 1);
  EXPECT_EQ(DetectCpuThreads(3).threads, 3);
}

}  // namespace
}  // namespace arach
