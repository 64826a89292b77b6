// The CPU backend's branch-free widening of stored half-width elements (engine/backend/cpu/half_elements.h)
// against the reference conversions of engine/core/dtype.h, on every one of the 65536 bit patterns.
#include "engine/backend/cpu/half_elements.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace arach {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

TEST(HalfElements, EveryHalfWidensExactlyAsHalfToFloat) {
  for (uint32_t code = 0; code <= 0xffff; ++code) {
    const float want = HalfToFloat(static_cast<uint16_t>(code));
    const float got = cpu::Widen(cpu::HalfBits{static_cast<uint16_t>(code)});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << code;
    } else {
      EXPECT_EQ(Bits(got), Bits(want)) << std::hex << code;  // signed zeros and subnormals included
    }
  }
}

TEST(HalfElements, EveryBFloat16WidensToTheUpperHalfOfAFloat) {
  for (uint32_t code = 0; code <= 0xffff; ++code) {
    EXPECT_EQ(Bits(cpu::Widen(cpu::BFloat16Bits{static_cast<uint16_t>(code)})), code << 16) << std::hex << code;
  }
}

}  // namespace
}  // namespace arach
