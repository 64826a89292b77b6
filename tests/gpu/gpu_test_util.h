// Helpers of the GPU tests (ctest label `gpu`): skipping without a device, random data, and one matrix
// held by both the CPU backend (float32) and the CUDA backend (bf16) from the same bf16-rounded values.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_device.h"
#include "engine/core/dtype.h"
#include "gtest/gtest.h"

namespace arach::testing {

inline bool HaveCudaDevice() {
  auto devices = ListCudaDevices();
  return devices.ok() && !devices->empty();
}

#define ARACH_REQUIRE_GPU()                                                                  \
  do {                                                                                       \
    if (!::arach::testing::HaveCudaDevice()) GTEST_SKIP() << "no CUDA device: GPU test skipped"; \
  } while (0)

// `count` normal values of deviation `scale`, rounded to bf16 so that both devices start from the same numbers.
inline std::vector<float> RandomBf16Values(std::mt19937& rng, size_t count, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& v : values) v = BFloat16ToFloat(FloatToBFloat16(normal(rng)));
  return values;
}

// A [rows, cols] matrix on both backends.
struct TwinMatrix {
  std::unique_ptr<DeviceBuffer> cpu_buffer, cuda_buffer;
  DeviceMatrix cpu, cuda;
};

inline TwinMatrix MakeTwin(Backend& cpu, Backend& cuda, const std::vector<float>& host, int64_t rows, int64_t cols) {
  TwinMatrix twin;
  const size_t count = static_cast<size_t>(rows * cols);
  twin.cpu_buffer = *cpu.Allocate(count * sizeof(float));
  twin.cuda_buffer = *cuda.Allocate(count * DTypeSize(cuda.activation_dtype()));
  cpu.UploadFloat(twin.cpu_buffer->data(), DType::kF32, host.data(), count);
  cuda.UploadFloat(twin.cuda_buffer->data(), cuda.activation_dtype(), host.data(), count);
  twin.cpu = DeviceMatrix::Dense(twin.cpu_buffer->data(), DType::kF32, rows, cols);
  twin.cuda = DeviceMatrix::Dense(twin.cuda_buffer->data(), cuda.activation_dtype(), rows, cols);
  return twin;
}

// Device int32 metadata on one backend.
inline std::unique_ptr<DeviceBuffer> UploadInts(Backend& backend, const std::vector<int32_t>& values) {
  auto buffer = *backend.Allocate(values.size() * sizeof(int32_t));
  backend.CopyToDevice(buffer->data(), values.data(), values.size() * sizeof(int32_t));
  return buffer;
}

inline std::vector<float> Download(Backend& backend, const DeviceMatrix& m) {
  std::vector<float> host(static_cast<size_t>(m.rows * m.cols));
  backend.DownloadFloat(host.data(), m);
  return host;
}

// Largest |a - b| / (atol + rtol |b|) over the values: <= 1 means within tolerance.
inline float WorstToleranceRatio(const std::vector<float>& a, const std::vector<float>& b, float atol, float rtol) {
  float worst = 0.0f;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]) / (atol + rtol * std::fabs(b[i])));
  }
  return a.size() == b.size() ? worst : 1e30f;
}

}  // namespace arach::testing
