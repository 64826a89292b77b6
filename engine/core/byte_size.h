// Byte counts as people read them in messages and logs.
#pragma once

#include <cstdint>
#include <string>

namespace arach {

// "1.50 GiB", "256.00 MiB", "12.00 KiB", "100 bytes" (binary units, two decimals).
std::string DescribeBytes(int64_t bytes);

}  // namespace arach
