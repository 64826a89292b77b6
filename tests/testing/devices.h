// Op tests written once for every device (the CTranslate2 pattern): a test suite parameterised over the
// device runs on the CPU backend (float32) always and on the CUDA backend (bf16) where a GPU is present,
// each with the tolerance of its dtype, against float32/double references computed on the host.
// Compiled with ARACH_TEST_CUDA_SIM (the *_cuda_sim_test executables, label cuda-sim), the same suites run once,
// on the CUDA backend's own kernels executed by the SIMT simulator (tests/cuda_sim) on the CPU.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_device.h"
#include "engine/core/dtype.h"
#include "gtest/gtest.h"
#if defined(ARACH_TEST_CUDA_SIM)
#include "tests/cuda_sim/simulated_cuda_backend.h"
#endif

namespace arach {
// gtest prints a test's device by name.
inline void PrintTo(DeviceKind kind, std::ostream* os) { *os << DeviceKindName(kind); }
}  // namespace arach

namespace arach::testing {

inline bool HaveCudaDevice() {
  auto devices = ListCudaDevices();
  return devices.ok() && !devices->empty();
}

#define ARACH_REQUIRE_GPU()                                                                        \
  do {                                                                                             \
    if (!::arach::testing::HaveCudaDevice()) GTEST_SKIP() << "no CUDA device: GPU test skipped"; \
  } while (0)

// The devices an op suite is instantiated for.
#if defined(ARACH_TEST_CUDA_SIM)
// The simulated backend's type: f16 where the executable is built with ARACH_TEST_CUDA_SIM_F16, else bf16.
#if defined(ARACH_TEST_CUDA_SIM_F16)
inline constexpr DType kSimulatedDType = DType::kF16;
#else
inline constexpr DType kSimulatedDType = DType::kBF16;
#endif
inline std::vector<DeviceKind> AllDevices() { return {DeviceKind::kCuda}; }
inline std::string DeviceName(const ::testing::TestParamInfo<DeviceKind>&) {
  return kSimulatedDType == DType::kF16 ? "cuda_sim_f16" : "cuda_sim_bf16";
}
#else
inline std::vector<DeviceKind> AllDevices() { return {DeviceKind::kCpu, DeviceKind::kCuda}; }
inline std::string DeviceName(const ::testing::TestParamInfo<DeviceKind>& info) { return std::string(DeviceKindName(info.param)); }
#endif

// How close a device's output must be to the host reference: |got - want| <= atol + rtol |want|.
struct Tolerance {
  float atol, rtol;
};
inline Tolerance ToleranceOf(DType dtype) {
  return dtype == DType::kF32 ? Tolerance{2e-5f, 2e-5f}   // summation order only
                              : Tolerance{2e-2f, 1e-2f};  // bf16 storage: about 3 significant digits
}

// Largest |got - want| / (atol + rtol |want|): <= 1 means within tolerance.
inline float WorstToleranceRatio(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol) {
  if (got.size() != want.size()) return 1e30f;
  float worst = 0.0f;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]) / (tol.atol + tol.rtol * std::fabs(want[i])));
  return worst;
}

// A backend of the test's device with helpers to move data in and out.
class DeviceFixture : public ::testing::TestWithParam<DeviceKind> {
 protected:
  void SetUp() override {
#if defined(ARACH_TEST_CUDA_SIM)
    backend_ = CreateSimulatedCudaBackend(kSimulatedDType);
    dtype_ = backend_->activation_dtype();
    return;
#endif
    if (GetParam() == DeviceKind::kCuda && !HaveCudaDevice()) GTEST_SKIP() << "no CUDA device: GPU case skipped";
    auto backend = CreateBackend(GetParam());
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    dtype_ = backend_->activation_dtype();
  }

  // `count` normal values of deviation `scale`, rounded to the device's dtype (so the host reference
  // starts from exactly the numbers the device holds).
  std::vector<float> Random(size_t count, float scale = 1.0f) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(count);
    for (float& v : values) v = RoundToDevice(normal(rng_));
    return values;
  }
  float RoundToDevice(float v) const {
    if (dtype_ == DType::kBF16) return BFloat16ToFloat(FloatToBFloat16(v));
    if (dtype_ == DType::kF16) return HalfToFloat(FloatToHalf(v));
    return v;
  }

  // A [rows, cols] matrix of the device's dtype (or `dtype`) holding `host`.
  DeviceMatrix Upload(const std::vector<float>& host, int64_t rows, int64_t cols, std::optional<DType> dtype = std::nullopt) {
    const DType type = dtype.value_or(dtype_);
    buffers_.push_back(*backend_->Allocate(static_cast<size_t>(rows * cols) * DTypeSize(type)));
    backend_->UploadFloat(buffers_.back()->data(), type, host.data(), static_cast<size_t>(rows * cols));
    return DeviceMatrix::Dense(buffers_.back()->data(), type, rows, cols);
  }
  DeviceMatrix Zeros(int64_t rows, int64_t cols, std::optional<DType> dtype = std::nullopt) {
    return Upload(std::vector<float>(static_cast<size_t>(rows * cols), 0.0f), rows, cols, dtype);
  }
  // Device int32 metadata.
  const int32_t* UploadInts(const std::vector<int32_t>& values) {
    buffers_.push_back(*backend_->Allocate(values.size() * sizeof(int32_t)));
    backend_->CopyToDevice(buffers_.back()->data(), values.data(), values.size() * sizeof(int32_t));
    return static_cast<const int32_t*>(buffers_.back()->data());
  }
  const float* UploadFloats(const std::vector<float>& values) {
    buffers_.push_back(*backend_->Allocate(values.size() * sizeof(float)));
    backend_->CopyToDevice(buffers_.back()->data(), values.data(), values.size() * sizeof(float));
    return static_cast<const float*>(buffers_.back()->data());
  }
  // An int8 weight matrix ([rows, cols] codes, one scale per row, as DeviceWeights stores --weight_dtype int8) of
  // `host`; `dequantized` receives the values it holds (code * scale) for the reference.
  DeviceMatrix UploadInt8Rows(const std::vector<float>& host, int64_t rows, int64_t cols, std::vector<float>* dequantized) {
    std::vector<int8_t> codes(host.size());
    std::vector<float> scales(static_cast<size_t>(rows));
    QuantizeRowsInt8(host.data(), rows, cols, codes.data(), scales.data());
    dequantized->resize(host.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) (*dequantized)[r * cols + c] = codes[r * cols + c] * scales[r];
    }
    buffers_.push_back(*backend_->Allocate(codes.size()));
    backend_->CopyToDevice(buffers_.back()->data(), codes.data(), codes.size());
    DeviceMatrix m = DeviceMatrix::Dense(buffers_.back()->data(), DType::kI8, rows, cols);
    m.row_scales = UploadFloats(scales);
    return m;
  }
  // Waits for the device (failing the test on an error) and reads `m` back as float32.
  std::vector<float> Download(const DeviceMatrix& m) {
    const absl::Status sync = backend_->Synchronize();
    EXPECT_TRUE(sync.ok()) << sync;
    std::vector<float> host(static_cast<size_t>(m.rows * m.cols));
    backend_->DownloadFloat(host.data(), m);
    return host;
  }
  // Expects `m` on the device to match `want` within the dtype's tolerance (or `tol`).
  void ExpectClose(const DeviceMatrix& m, const std::vector<float>& want, const std::string& what,
                   std::optional<Tolerance> tol = std::nullopt) {
    const float ratio = WorstToleranceRatio(Download(m), want, tol.value_or(ToleranceOf(m.dtype)));
    EXPECT_LE(ratio, 1.0f) << what << " on " << DeviceKindName(GetParam()) << ": worst error is " << ratio << "x the tolerance";
  }

  std::mt19937 rng_{1234};
  std::unique_ptr<Backend> backend_;
  DType dtype_ = DType::kF32;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

}  // namespace arach::testing
