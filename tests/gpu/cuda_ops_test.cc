// Every CUDA backend op against the CPU backend on the same (bf16-rounded) inputs.
#include <cmath>
#include <numeric>

#include "engine/backend/backend.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"

namespace arach {
namespace {

using testing::Download;
using testing::MakeTwin;
using testing::RandomBf16Values;
using testing::TwinMatrix;
using testing::UploadInts;
using testing::WorstToleranceRatio;

// bf16 outputs: about 3 significant digits.
constexpr float kAtol = 2e-2f, kRtol = 1e-2f;

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_GPU();
    cpu_ = *CreateBackend(DeviceKind::kCpu);
    auto cuda = CreateBackend(DeviceKind::kCuda);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    cuda_ = std::move(*cuda);
  }
  TwinMatrix Random(int64_t rows, int64_t cols, float scale = 1.0f) {
    return MakeTwin(*cpu_, *cuda_, RandomBf16Values(rng_, static_cast<size_t>(rows * cols), scale), rows, cols);
  }
  TwinMatrix Zeros(int64_t rows, int64_t cols) {
    return MakeTwin(*cpu_, *cuda_, std::vector<float>(static_cast<size_t>(rows * cols), 0.0f), rows, cols);
  }
  // Synchronizes the CUDA backend and compares `m` on both devices.
  void ExpectSame(const TwinMatrix& m, const char* what, float atol = kAtol, float rtol = kRtol) {
    ASSERT_TRUE(cuda_->Synchronize().ok()) << what;
    const float ratio = WorstToleranceRatio(Download(*cuda_, m.cuda), Download(*cpu_, m.cpu), atol, rtol);
    EXPECT_LE(ratio, 1.0f) << what << ": worst error is " << ratio << "x the tolerance";
  }

  std::mt19937 rng_{1234};
  std::unique_ptr<Backend> cpu_, cuda_;
};

TEST_F(CudaOps, EmbedWithAndWithoutPositions) {
  TwinMatrix table = Random(50, 96), positions_table = Random(40, 96), out = Zeros(7, 96);
  const std::vector<int32_t> ids = {3, 0, 49, 7, 7, 12, 1}, positions = {0, 1, 2, 3, 39, 5, 6};
  auto cpu_ids = UploadInts(*cpu_, ids), cuda_ids = UploadInts(*cuda_, ids);
  auto cpu_pos = UploadInts(*cpu_, positions), cuda_pos = UploadInts(*cuda_, positions);
  for (bool with_positions : {true, false}) {
    cpu_->Embed(static_cast<int32_t*>(cpu_ids->data()), static_cast<int32_t*>(cpu_pos->data()), table.cpu,
                with_positions ? positions_table.cpu : DeviceMatrix{}, out.cpu);
    cuda_->Embed(static_cast<int32_t*>(cuda_ids->data()), static_cast<int32_t*>(cuda_pos->data()), table.cuda,
                 with_positions ? positions_table.cuda : DeviceMatrix{}, out.cuda);
    ExpectSame(out, with_positions ? "embed + positions" : "embed");
  }
}

TEST_F(CudaOps, LayerNormAndRmsNorm) {
  TwinMatrix in = Random(9, 320, 2.0f), weight = Random(1, 320), bias = Random(1, 320), out = Zeros(9, 320);
  cpu_->LayerNorm(in.cpu, weight.cpu, bias.cpu, 1e-5f, out.cpu);
  cuda_->LayerNorm(in.cuda, weight.cuda, bias.cuda, 1e-5f, out.cuda);
  ExpectSame(out, "layer norm");
  cpu_->RmsNorm(in.cpu, weight.cpu, 1e-6f, out.cpu);
  cuda_->RmsNorm(in.cuda, weight.cuda, 1e-6f, out.cuda);
  ExpectSame(out, "rms norm");
}

TEST_F(CudaOps, LinearShapesBiasAccumulateAndColumnSlices) {
  for (int64_t m : {1, 3, 17, 130}) {
    TwinMatrix in = Random(m, 256, 0.5f), weight = Random(192, 256, 0.1f), bias = Random(1, 192);
    TwinMatrix out = Random(m, 192);
    cpu_->Linear(in.cpu, weight.cpu, bias.cpu, out.cpu, /*accumulate=*/false);
    cuda_->Linear(in.cuda, weight.cuda, bias.cuda, out.cuda, /*accumulate=*/false);
    ExpectSame(out, "linear + bias");
    cpu_->Linear(in.cpu, weight.cpu, DeviceMatrix{}, out.cpu, /*accumulate=*/true);
    cuda_->Linear(in.cuda, weight.cuda, DeviceMatrix{}, out.cuda, /*accumulate=*/true);
    ExpectSame(out, "linear accumulate");
    // Output into the middle columns of a wider buffer (a fused QKV slice), input from a column slice.
    TwinMatrix wide = Zeros(m, 400);
    TwinMatrix half = Random(192, 128, 0.1f);
    cpu_->Linear(in.cpu.Cols(64, 128), half.cpu, DeviceMatrix{}, wide.cpu.Cols(100, 192), false);
    cuda_->Linear(in.cuda.Cols(64, 128), half.cuda, DeviceMatrix{}, wide.cuda.Cols(100, 192), false);
    ExpectSame(wide, "linear on slices");
  }
}

TEST_F(CudaOps, LinearIntoFloat32Logits) {
  TwinMatrix in = Random(5, 128, 0.5f), weight = Random(1000, 128, 0.2f);
  std::vector<float> cpu_out(5 * 1000), cuda_out(5 * 1000);
  auto cpu_buffer = *cpu_->Allocate(cpu_out.size() * sizeof(float));
  auto cuda_buffer = *cuda_->Allocate(cuda_out.size() * sizeof(float));
  const DeviceMatrix cpu_logits = DeviceMatrix::Dense(cpu_buffer->data(), DType::kF32, 5, 1000);
  const DeviceMatrix cuda_logits = DeviceMatrix::Dense(cuda_buffer->data(), DType::kF32, 5, 1000);
  cpu_->Linear(in.cpu, weight.cpu, DeviceMatrix{}, cpu_logits, false);
  cuda_->Linear(in.cuda, weight.cuda, DeviceMatrix{}, cuda_logits, false);
  ASSERT_TRUE(cuda_->Synchronize().ok());
  // Products of bf16 values summed in float32: only summation order differs.
  EXPECT_LE(WorstToleranceRatio(Download(*cuda_, cuda_logits), Download(*cpu_, cpu_logits), 1e-4f, 1e-4f), 1.0f);
}

TEST_F(CudaOps, RopeOnQueriesAndKeys) {
  const int heads = 3, head_dim = 64, rotary_dim = 32;
  TwinMatrix x = Random(6, heads * head_dim);
  const std::vector<int32_t> positions = {0, 1, 5, 100, 2047, 7};
  std::vector<float> inv_freq(rotary_dim / 2);
  for (int i = 0; i < rotary_dim / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rotary_dim);
  auto cpu_pos = UploadInts(*cpu_, positions), cuda_pos = UploadInts(*cuda_, positions);
  auto cpu_freq = *cpu_->Allocate(inv_freq.size() * 4), cuda_freq = *cuda_->Allocate(inv_freq.size() * 4);
  cpu_->CopyToDevice(cpu_freq->data(), inv_freq.data(), inv_freq.size() * 4);
  cuda_->CopyToDevice(cuda_freq->data(), inv_freq.data(), inv_freq.size() * 4);
  cpu_->Rope(x.cpu, heads, head_dim, rotary_dim, static_cast<int32_t*>(cpu_pos->data()), static_cast<float*>(cpu_freq->data()));
  cuda_->Rope(x.cuda, heads, head_dim, rotary_dim, static_cast<int32_t*>(cuda_pos->data()), static_cast<float*>(cuda_freq->data()));
  ExpectSame(x, "rope");
}

TEST_F(CudaOps, ActivationsAndGatedActivation) {
  for (Activation act : {Activation::kGeluTanh, Activation::kGeluErf, Activation::kSilu, Activation::kRelu}) {
    TwinMatrix x = Random(4, 300, 3.0f);
    cpu_->Activate(act, x.cpu);
    cuda_->Activate(act, x.cuda);
    ExpectSame(x, "activation");
    TwinMatrix gate_up = Random(4, 600, 2.0f), out = Zeros(4, 300);
    cpu_->GatedActivate(act, gate_up.cpu, out.cpu);
    cuda_->GatedActivate(act, gate_up.cuda, out.cuda);
    ExpectSame(out, "gated activation");
  }
}

TEST_F(CudaOps, AddGatherScatterFill) {
  TwinMatrix x = Random(8, 96), y = Random(8, 96);
  cpu_->Add(x.cpu, y.cpu);
  cuda_->Add(x.cuda, y.cuda);
  ExpectSame(x, "add");

  const std::vector<int32_t> rows = {7, 2, 5};
  auto cpu_rows = UploadInts(*cpu_, rows), cuda_rows = UploadInts(*cuda_, rows);
  TwinMatrix gathered = Zeros(3, 96);
  cpu_->GatherRows(x.cpu, static_cast<int32_t*>(cpu_rows->data()), gathered.cpu);
  cuda_->GatherRows(x.cuda, static_cast<int32_t*>(cuda_rows->data()), gathered.cuda);
  ExpectSame(gathered, "gather");
  for (bool accumulate : {false, true}) {
    TwinMatrix src = Random(3, 96);
    cpu_->ScatterRows(src.cpu, static_cast<int32_t*>(cpu_rows->data()), y.cpu, accumulate);
    cuda_->ScatterRows(src.cuda, static_cast<int32_t*>(cuda_rows->data()), y.cuda, accumulate);
    ExpectSame(y, accumulate ? "scatter accumulate" : "scatter");
  }
  TwinMatrix row = Random(1, 96);
  cpu_->FillRows(row.cpu, y.cpu.Rows(2, 4));
  cuda_->FillRows(row.cuda, y.cuda.Rows(2, 4));
  ExpectSame(y, "fill rows");
}

TEST_F(CudaOps, WriteKvLandsInTheNamedSlots) {
  const int kv_heads = 2, head_dim = 32, block_size = 4, num_blocks = 6;
  const int64_t slot_elems = kv_heads * head_dim;
  TwinMatrix k = Random(5, slot_elems), v = Random(5, slot_elems);
  TwinMatrix k_cache = Zeros(num_blocks * block_size, slot_elems), v_cache = Zeros(num_blocks * block_size, slot_elems);
  const std::vector<int32_t> slots = {0, 23, 9, 10, 4};
  auto cpu_slots = UploadInts(*cpu_, slots), cuda_slots = UploadInts(*cuda_, slots);
  const PagedKvLayer cpu_layer{k_cache.cpu.data, v_cache.cpu.data, DType::kF32, block_size, kv_heads, head_dim};
  const PagedKvLayer cuda_layer{k_cache.cuda.data, v_cache.cuda.data, DType::kBF16, block_size, kv_heads, head_dim};
  cpu_->WriteKv(k.cpu, v.cpu, static_cast<int32_t*>(cpu_slots->data()), cpu_layer);
  cuda_->WriteKv(k.cuda, v.cuda, static_cast<int32_t*>(cuda_slots->data()), cuda_layer);
  ExpectSame(k_cache, "k cache", /*atol=*/1e-6f, /*rtol=*/0.0f);  // a copy: exact
  ExpectSame(v_cache, "v cache", /*atol=*/1e-6f, /*rtol=*/0.0f);
}

TEST_F(CudaOps, OutOfMemoryIsResourceExhausted) {
  auto huge = cuda_->Allocate(size_t{1} << 50);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_TRUE(cuda_->Synchronize().ok()) << "a failed allocation must not poison later work";
}

}  // namespace
}  // namespace arach
