#include "engine/core/byte_size.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arach {

std::string DescribeBytes(int64_t bytes) {
  const double value = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30) || bytes <= -(int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", value / (1 << 30));
  if (bytes >= (int64_t{1} << 20) || bytes <= -(int64_t{1} << 20)) return absl::StrFormat("%.2f MiB", value / (1 << 20));
  if (bytes >= 1024 || bytes <= -1024) return absl::StrFormat("%.2f KiB", value / 1024);
  return absl::StrCat(bytes, " bytes");
}

}  // namespace arach
