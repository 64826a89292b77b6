// Plain views of device memory handed to backend ops.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/dtype.h"

namespace arach {

// A 2-D row-major view: `rows` x `cols` elements of `dtype`, consecutive rows `stride` elements apart.
// Column slices (e.g. the K part of a fused QKV buffer) are views with the parent's stride.
struct DeviceMatrix {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;  // elements between row r and row r + 1 (>= cols)
  const float* row_scales = nullptr;  // kI8 only: [rows], element (r, c) = code * row_scales[r]

  static DeviceMatrix Dense(void* data, DType dtype, int64_t rows, int64_t cols) {
    return DeviceMatrix{data, dtype, rows, cols, cols};
  }
  // Rows [begin, begin + count).
  DeviceMatrix Rows(int64_t begin, int64_t count) const {
    return DeviceMatrix{static_cast<char*>(data) + begin * stride * DTypeSize(dtype), dtype, count, cols, stride,
                        row_scales != nullptr ? row_scales + begin : nullptr};
  }
  // Columns [begin, begin + count) of every row.
  DeviceMatrix Cols(int64_t begin, int64_t count) const {
    return DeviceMatrix{static_cast<char*>(data) + begin * DTypeSize(dtype), dtype, rows, count, stride, row_scales};
  }
  bool contiguous() const { return stride == cols; }
  template <typename T>
  T* As() const { return static_cast<T*>(data); }
};

}  // namespace arach
