// The CPU backend's buffers: one of at least a huge page (2 MiB) starts on a huge-page boundary and is marked
// for transparent huge pages (madvise), so that the weights, the KV cache and the step workspaces are faulted in and
// looked up 2 MiB at a time; a smaller one starts on a cache line. The mark is read back from /proc/self/smaps
// (THPeligible) where the kernel's THP mode is not "never".
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/backend/backend.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

bool TransparentHugePagesOff() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text((std::istreambuf_iterator<char>(mode)), std::istreambuf_iterator<char>());
  return text.empty() || text.find("[never]") != std::string::npos;
}

// The "THPeligible:" value of the mapping that holds `address` in /proc/self/smaps; -1 where there is none.
int ThpEligible(const void* address) {
  const auto target = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start <= target && target < end;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(std::strlen("THPeligible:")));
    }
  }
  return -1;
}

TEST(CpuBuffers, ALargeBufferStartsOnAHugePageAndIsMarkedForThem) {
  auto backend = CreateBackend(DeviceKind::kCpu, BackendOptions{.cpu_threads = 1});
  ASSERT_TRUE(backend.ok()) << backend.status();
  const size_t bytes = 3 * kHugePage + 5;
  auto buffer = (*backend)->Allocate(bytes);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  ASSERT_EQ((*buffer)->size(), bytes);
  auto* data = static_cast<unsigned char*>((*buffer)->data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kHugePage, 0u);
  (*backend)->Fill(data, bytes, 0x5a);  // every byte asked for is usable
  EXPECT_EQ(data[bytes - 1], 0x5a);
  if (TransparentHugePagesOff()) GTEST_SKIP() << "transparent huge pages are off on this machine: no mark to read back";
  EXPECT_EQ(ThpEligible(data), 1) << "the buffer's mapping is not marked for transparent huge pages";
}

TEST(CpuBuffers, ASmallBufferStartsOnACacheLine) {
  auto backend = CreateBackend(DeviceKind::kCpu, BackendOptions{.cpu_threads = 1});
  ASSERT_TRUE(backend.ok()) << backend.status();
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{kHugePage - 1}}) {
    auto buffer = (*backend)->Allocate(bytes);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % 64, 0u) << bytes << " bytes";
  }
}

}  // namespace
}  // namespace arach
