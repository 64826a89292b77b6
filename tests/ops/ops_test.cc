// Every backend op except attention (attention_test.cc), written once and run on every device against a
// host reference computed in double precision from the same (device-rounded) inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/backend/backend.h"
#include "gtest/gtest.h"
#include "tests/testing/devices.h"

namespace arach {
namespace {

using testing::DeviceFixture;

class Ops : public DeviceFixture {};

// The activations as the model definitions write them, in double precision.
double ActivationOf(Activation act, double x) {
  switch (act) {
    case Activation::kGeluTanh: return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::kGeluErf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::kSilu: return x / (1.0 + std::exp(-x));
    case Activation::kRelu: return std::max(x, 0.0);
  }
  return 0;
}

TEST_P(Ops, EmbedWithAndWithoutPositions) {
  const int64_t d = 96;
  const std::vector<float> table = Random(50 * d), positions_table = Random(40 * d);
  const std::vector<int32_t> ids = {3, 0, 49, 7, 7, 12, 1}, positions = {0, 1, 2, 3, 39, 5, 6};
  const DeviceMatrix t = Upload(table, 50, d), p = Upload(positions_table, 40, d), out = Zeros(7, d);
  for (bool with_positions : {true, false}) {
    backend_->Embed(UploadInts(ids), UploadInts(positions), t, with_positions ? p : DeviceMatrix{}, out);
    std::vector<float> want;
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t c = 0; c < d; ++c) want.push_back(table[ids[i] * d + c] + (with_positions ? positions_table[positions[i] * d + c] : 0.0f));
    }
    ExpectClose(out, want, with_positions ? "embed + positions" : "embed");
  }
}

TEST_P(Ops, LayerNormAndRmsNorm) {
  const int64_t rows = 9, d = 320;
  const std::vector<float> in = Random(rows * d, 2.0f), weight = Random(d), bias = Random(d);
  const DeviceMatrix x = Upload(in, rows, d), w = Upload(weight, 1, d), b = Upload(bias, 1, d), out = Zeros(rows, d);
  std::vector<float> layer_norm, rms_norm;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, square = 0;
    for (int64_t c = 0; c < d; ++c) mean += in[r * d + c];
    mean /= d;
    double var = 0;
    for (int64_t c = 0; c < d; ++c) {
      var += (in[r * d + c] - mean) * (in[r * d + c] - mean);
      square += static_cast<double>(in[r * d + c]) * in[r * d + c];
    }
    var /= d;
    for (int64_t c = 0; c < d; ++c) {
      layer_norm.push_back(static_cast<float>((in[r * d + c] - mean) / std::sqrt(var + 1e-5) * weight[c] + bias[c]));
      rms_norm.push_back(static_cast<float>(in[r * d + c] / std::sqrt(square / d + 1e-6) * weight[c]));
    }
  }
  backend_->LayerNorm(x, w, b, 1e-5f, out);
  ExpectClose(out, layer_norm, "layer norm");
  backend_->RmsNorm(x, w, 1e-6f, out);
  ExpectClose(out, rms_norm, "rms norm");
}

TEST_P(Ops, RmsNormOfEachHeadInAColumnSlice) {
  // The heads sit at columns [first, first + 96) of the rows: from column 8 they are 16-byte aligned (FlashInfer's
  // kernel on the GPU), from column 3 not (ours).
  for (const int first : {8, 3}) {
  SCOPED_TRACE(::testing::Message() << "heads from column " << first);
  const int rows = 5, heads = 3, head_dim = 32, width = 200;
  const std::vector<float> host = Random(rows * width, 2.0f), weight = Random(head_dim);
  const DeviceMatrix all = Upload(host, rows, width);
  backend_->RmsNormHeads(all.Cols(first, heads * head_dim), heads, head_dim, Upload(weight, 1, head_dim), 1e-6f);
  std::vector<float> want = host;
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      float* v = &want[r * width + first + h * head_dim];
      double square = 0;
      for (int c = 0; c < head_dim; ++c) square += static_cast<double>(v[c]) * v[c];
      const double inv = 1.0 / std::sqrt(square / head_dim + 1e-6);
      for (int c = 0; c < head_dim; ++c) v[c] = static_cast<float>(v[c] * inv * weight[c]);
    }
  }
  ExpectClose(all, want, "head rms norm (other columns untouched)");
  }
}

// in [m, k] x weight [n, k]^T + bias, in double precision.
std::vector<float> MatMulT(const std::vector<float>& in, const std::vector<float>& weight, const std::vector<float>* bias,
                           int64_t m, int64_t k, int64_t n, int64_t in_stride = 0, int64_t in_offset = 0) {
  if (in_stride == 0) in_stride = k;
  std::vector<float> out(m * n);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double sum = bias != nullptr ? (*bias)[c] : 0.0;
      for (int64_t i = 0; i < k; ++i) sum += static_cast<double>(in[r * in_stride + in_offset + i]) * weight[c * k + i];
      out[r * n + c] = static_cast<float>(sum);
    }
  }
  return out;
}

TEST_P(Ops, LinearShapesBiasAccumulateAndColumnSlices) {
  for (int64_t m : {1, 3, 17, 130}) {
    const std::vector<float> in = Random(m * 256, 0.5f), weight = Random(192 * 256, 0.1f), bias = Random(192), start = Random(m * 192);
    const DeviceMatrix x = Upload(in, m, 256), w = Upload(weight, 192, 256), b = Upload(bias, 1, 192);
    const DeviceMatrix out = Upload(start, m, 192);
    backend_->Linear(x, w, b, out, /*accumulate=*/false);
    const std::vector<float> with_bias = MatMulT(in, weight, &bias, m, 256, 192);
    ExpectClose(out, with_bias, "linear + bias");
    // Accumulate onto what the device holds now (its own rounding of with_bias).
    std::vector<float> accumulated = Download(out);
    const std::vector<float> product = MatMulT(in, weight, nullptr, m, 256, 192);
    for (size_t i = 0; i < accumulated.size(); ++i) accumulated[i] += product[i];
    backend_->Linear(x, w, DeviceMatrix{}, out, /*accumulate=*/true);
    ExpectClose(out, accumulated, "linear accumulate");
    // Output into the middle columns of a wider buffer (a fused QKV slice), input from a column slice.
    const DeviceMatrix wide = Zeros(m, 400);
    const std::vector<float> half = Random(192 * 128, 0.1f);
    backend_->Linear(x.Cols(64, 128), Upload(half, 192, 128), DeviceMatrix{}, wide.Cols(100, 192), false);
    const std::vector<float> slice = MatMulT(in, half, nullptr, m, 128, 192, /*in_stride=*/256, /*in_offset=*/64);
    std::vector<float> want(m * 400, 0.0f);
    for (int64_t r = 0; r < m; ++r) std::copy(&slice[r * 192], &slice[r * 192] + 192, &want[r * 400 + 100]);
    ExpectClose(wide, want, "linear on slices");
  }
}

// LinearActivate is Linear, then the activation (on the GPU GELU-tanh and ReLU run in cuBLASLt's epilogue, rounded once).
TEST_P(Ops, LinearActivateIsLinearThenTheActivation) {
  for (Activation act : {Activation::kGeluTanh, Activation::kGeluErf, Activation::kSilu, Activation::kRelu}) {
    for (int64_t m : {1, 9}) {
      const std::vector<float> in = Random(m * 128, 1.0f), weight = Random(96 * 128, 0.2f), bias = Random(96);
      const DeviceMatrix out = Zeros(m, 96);
      for (bool with_bias : {true, false}) {
        backend_->LinearActivate(Upload(in, m, 128), Upload(weight, 96, 128), with_bias ? Upload(bias, 1, 96) : DeviceMatrix{},
                                 act, out);
        std::vector<float> want = MatMulT(in, weight, with_bias ? &bias : nullptr, m, 128, 96);
        for (float& v : want) v = static_cast<float>(ActivationOf(act, v));
        ExpectClose(out, want, absl::StrCat("linear + activation ", static_cast<int>(act), with_bias ? " with bias" : ""));
      }
    }
  }
}

// Weight matrices in f16 or bf16 (the CPU backend's --weight_dtype; the GPU's compute type): products of the
// exact half-width values, so a float32 device stays within summation-order tolerance. Row counts cover the
// decode kernel (<= 12) and the GEMM path; K and N leave tails.
TEST_P(Ops, LinearAndEmbedWithHalfWidthWeights) {
  for (DType weight_dtype : {DType::kBF16, DType::kF16}) {
    if (GetParam() == DeviceKind::kCuda && weight_dtype != dtype_) continue;  // the GPU's weights are in its compute type
    auto round = [weight_dtype](std::vector<float> v) {
      for (float& x : v) x = weight_dtype == DType::kBF16 ? BFloat16ToFloat(FloatToBFloat16(x)) : HalfToFloat(FloatToHalf(x));
      return v;
    };
    const std::string name(DTypeName(weight_dtype));
    const int64_t k = 200;
    for (int64_t n : {195, 2100}) {  // 2100: a GEMM chunk spans several 256-row widened blocks (2 threads)
      const std::vector<float> weight = round(Random(n * k, 0.1f)), bias = Random(n);
      const DeviceMatrix w = Upload(weight, n, k, weight_dtype), b = Upload(bias, 1, n);
      for (int64_t m : {1, 3, 5, 12, 13, 130}) {
        const std::vector<float> in = Random(m * k, 0.5f);
        const DeviceMatrix x = Upload(in, m, k), out = Zeros(m, n);
        backend_->Linear(x, w, b, out, /*accumulate=*/false);
        ExpectClose(out, MatMulT(in, weight, &bias, m, k, n),
                    name + "-weight linear, " + std::to_string(m) + " x " + std::to_string(n));
      }
    }
    // Column counts of whole 32-value blocks, which bf16 weights take to the AMX tiles from 4 rows on where the
    // CPU has them (cpu_amx.h): row counts around the 16- and 32-row tiles, features past the last whole 32-row
    // block, plain and accumulating. The tiles split each activation into two bf16 parts (within 2^-17), so the
    // float32 tolerance holds.
    for (int64_t cols : {64, 96}) {
      const int64_t n = 195;
      const std::vector<float> weight = round(Random(n * cols, 0.1f)), bias = Random(n);
      const DeviceMatrix w = Upload(weight, n, cols, weight_dtype), b = Upload(bias, 1, n);
      for (int64_t m : {4, 15, 16, 17, 33, 64}) {
        const std::vector<float> in = Random(m * cols, 0.5f);
        const DeviceMatrix x = Upload(in, m, cols), out = Zeros(m, n);
        const std::string what = name + "-weight linear, whole column blocks, " + std::to_string(m) + " x " + std::to_string(cols);
        backend_->Linear(x, w, b, out, /*accumulate=*/false);
        const std::vector<float> want = MatMulT(in, weight, &bias, m, cols, n);
        ExpectClose(out, want, what);
        backend_->Linear(x, w, DeviceMatrix{}, out, /*accumulate=*/true);
        std::vector<float> twice = MatMulT(in, weight, &bias, m, cols, n);
        for (size_t i = 0; i < twice.size(); ++i) twice[i] = want[i] + (twice[i] - bias[i % n]);
        ExpectClose(out, twice, what + ", accumulating");
      }
    }
    const std::vector<float> table = round(Random(50 * k)), positions_table = round(Random(40 * k));
    const std::vector<int32_t> ids = {3, 0, 49, 7}, positions = {0, 1, 39, 5};
    const DeviceMatrix out = Zeros(4, k);
    backend_->Embed(UploadInts(ids), UploadInts(positions), Upload(table, 50, k, weight_dtype), Upload(positions_table, 40, k, weight_dtype),
                    out);
    std::vector<float> want;
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t c = 0; c < k; ++c) want.push_back(RoundToDevice(table[ids[i] * k + c] + positions_table[positions[i] * k + c]));
    }
    ExpectClose(out, want, name + " embedding + positions");
  }
}

// Weight matrices in int8 with one scale per row (the CPU backend's --weight_dtype int8) meet activations quantized
// per row as the kernel does (scale max|x| / 127, codes rounded to nearest, ties away from zero), at every row
// count: the integer dot products are exact, so the results are those of the quantized values within float
// rounding. An embedding row is its codes times its scale.
// `in` ([m, k]) as the int8 kernel sees it: each row rounded to 255 levels of max|row| / 127.
std::vector<float> QuantizedPerRow(const std::vector<float>& in, int64_t m, int64_t k) {
  std::vector<float> out(in.size());
  for (int64_t r = 0; r < m; ++r) {
    float amax = 0.0f;
    for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::fabs(in[r * k + c]));
    const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    for (int64_t c = 0; c < k; ++c) out[r * k + c] = static_cast<float>(std::lround(in[r * k + c] * (1.0f / scale))) * scale;
  }
  return out;
}

TEST_P(Ops, LinearAndEmbedWithInt8Weights) {
  if (GetParam() == DeviceKind::kCuda) GTEST_SKIP() << "the GPU keeps f16 or bf16 weights";
  const int64_t k = 200;
  for (int64_t n : {195, 2100}) {
    std::vector<float> weight;
    const DeviceMatrix w = UploadInt8Rows(Random(n * k, 0.1f), n, k, &weight);
    const std::vector<float> bias = Random(n);
    const DeviceMatrix b = Upload(bias, 1, n);
    for (int64_t m : {1, 3, 5, 12, 13, 130}) {
      std::vector<float> in = Random(m * k, 0.5f);
      if (m == 3) std::fill(in.begin() + k, in.begin() + 2 * k, 0.0f);  // a zero row has no scale to take
      const DeviceMatrix x = Upload(in, m, k), out = Zeros(m, n);
      backend_->Linear(x, w, b, out, /*accumulate=*/false);
      const std::vector<float> seen = QuantizedPerRow(in, m, k);
      ExpectClose(out, MatMulT(seen, weight, &bias, m, k, n), "int8-weight linear, " + std::to_string(m) + " x " + std::to_string(n));
      // The quantized activations stay close to the float32 product: each activation moves by at most half a step
      // (max|x| / 254, ~0.006 here), about 0.004 per output (one standard deviation over 200 weights of ~0.06).
      ExpectClose(out, MatMulT(in, weight, &bias, m, k, n), "int8-weight linear against float32 activations",
                  testing::Tolerance{4e-2f, 2e-2f});
      backend_->Linear(x, w, DeviceMatrix{}, out, /*accumulate=*/true);
      std::vector<float> twice = MatMulT(seen, weight, &bias, m, k, n);
      const std::vector<float> product = MatMulT(seen, weight, nullptr, m, k, n);
      for (size_t i = 0; i < twice.size(); ++i) twice[i] += product[i];
      ExpectClose(out, twice, "int8-weight linear accumulate");
    }
    // A row slice keeps its rows' scales (the fused QKV weight is sliced so).
    const std::vector<float> two_rows = Random(2 * k, 0.5f);
    const DeviceMatrix x = Upload(two_rows, 2, k), out = Zeros(2, 7);
    backend_->Linear(x, w.Rows(100, 7), DeviceMatrix{}, out, /*accumulate=*/false);
    const std::vector<float> slice(weight.begin() + 100 * k, weight.begin() + 107 * k);
    ExpectClose(out, MatMulT(QuantizedPerRow(two_rows, 2, k), slice, nullptr, 2, k, 7), "int8-weight linear of rows 100-106");
    // A row holding an inf or a nan comes out nan (its quantization scale is nan); the rows beside it are unharmed.
    {
      std::vector<float> in = Random(3 * k, 0.5f);
      in[k + 17] = std::numeric_limits<float>::quiet_NaN();
      in[2 * k + 5] = std::numeric_limits<float>::infinity();
      const DeviceMatrix bad = Upload(in, 3, k), bad_out = Zeros(3, n);
      backend_->Linear(bad, w, DeviceMatrix{}, bad_out, /*accumulate=*/false);
      const std::vector<float> got = Download(bad_out);
      const std::vector<float> want = MatMulT(QuantizedPerRow(std::vector<float>(in.begin(), in.begin() + k), 1, k),
                                              weight, nullptr, 1, k, n);
      for (int64_t c = 0; c < n; ++c) {
        EXPECT_NEAR(got[c], want[c], 2e-5f + 2e-5f * std::fabs(want[c])) << "finite row, column " << c;
        EXPECT_TRUE(std::isnan(got[n + c])) << "row with a nan, column " << c << ": " << got[n + c];
        EXPECT_TRUE(std::isnan(got[2 * n + c])) << "row with an inf, column " << c << ": " << got[2 * n + c];
      }
    }
    // Column counts that are whole 64-byte blocks, which the AMX tiles take from 4 rows on where the CPU has them
    // (cpu_amx.h): row counts around the 16- and 32-row tiles, features past the last whole 32-row block.
    for (int64_t cols : {64, 192}) {
      std::vector<float> tile_weight;
      const DeviceMatrix tw = UploadInt8Rows(Random(n * cols, 0.1f), n, cols, &tile_weight);
      for (int64_t m : {4, 15, 16, 17, 33, 64}) {
        const std::vector<float> in = Random(m * cols, 0.5f);
        const DeviceMatrix tx = Upload(in, m, cols), tout = Zeros(m, n);
        backend_->Linear(tx, tw, b, tout, /*accumulate=*/false);
        const std::vector<float> seen = QuantizedPerRow(in, m, cols);
        ExpectClose(tout, MatMulT(seen, tile_weight, &bias, m, cols, n),
                    "int8-weight linear, whole column blocks, " + std::to_string(m) + " x " + std::to_string(n));
        backend_->Linear(tx, tw, DeviceMatrix{}, tout, /*accumulate=*/true);
        std::vector<float> twice = MatMulT(seen, tile_weight, &bias, m, cols, n);
        const std::vector<float> product = MatMulT(seen, tile_weight, nullptr, m, cols, n);
        for (size_t i = 0; i < twice.size(); ++i) twice[i] += product[i];
        ExpectClose(tout, twice, "int8-weight linear accumulate, whole column blocks");
      }
    }
    // Column counts around the 64-byte vectors of the integer dot products: 1, 63, 64, 65, 130.
    for (int64_t cols : {1, 63, 64, 65, 130}) {
      std::vector<float> small_weight;
      const DeviceMatrix sw = UploadInt8Rows(Random(9 * cols, 0.1f), 9, cols, &small_weight);
      const std::vector<float> in = Random(5 * cols, 0.5f);
      const DeviceMatrix sx = Upload(in, 5, cols), sout = Zeros(5, 9);
      backend_->Linear(sx, sw, DeviceMatrix{}, sout, /*accumulate=*/false);
      ExpectClose(sout, MatMulT(QuantizedPerRow(in, 5, cols), small_weight, nullptr, 5, cols, 9),
                  "int8-weight linear over " + std::to_string(cols) + " columns");
    }
  }
  std::vector<float> table;
  const DeviceMatrix t = UploadInt8Rows(Random(50 * k), 50, k, &table);
  const std::vector<int32_t> ids = {3, 0, 49, 7};
  const DeviceMatrix out = Zeros(4, k);
  backend_->Embed(UploadInts(ids), UploadInts({0, 0, 0, 0}), t, DeviceMatrix{}, out);
  std::vector<float> want;
  for (int32_t id : ids) want.insert(want.end(), table.begin() + id * k, table.begin() + (id + 1) * k);
  ExpectClose(out, want, "int8 embedding", testing::Tolerance{0.0f, 0.0f});
  ExpectClose(t, table, "int8 download", testing::Tolerance{0.0f, 0.0f});
}

TEST_P(Ops, LinearIntoFloat32Logits) {
  const std::vector<float> in = Random(5 * 128, 0.5f), weight = Random(1000 * 128, 0.2f);
  const DeviceMatrix logits = Upload(std::vector<float>(5 * 1000, 0.0f), 5, 1000, DType::kF32);
  backend_->Linear(Upload(in, 5, 128), Upload(weight, 1000, 128), DeviceMatrix{}, logits, false);
  // Products of device-held values summed in float32: only summation order differs.
  ExpectClose(logits, MatMulT(in, weight, nullptr, 5, 128, 1000), "logits", testing::Tolerance{1e-4f, 1e-4f});
}

TEST_P(Ops, RopeRotatesTheLeadingDimsOfEveryHead) {
  // Head sizes and rotary widths FlashInfer's kernel takes on the GPU (64 and 128 with rotary halves of 8n) and
  // ones it does not (ours then): 64 with 24 rotating, 32; whole rows and heads inside a wider row (q of qkv).
  struct Case {
    int heads, head_dim, rotary_dim, row_width, first_col;
  };
  for (const Case& c : {Case{3, 64, 32, 192, 0}, Case{2, 64, 16, 256, 64}, Case{2, 128, 128, 384, 128}, Case{2, 64, 24, 128, 0},
                        Case{3, 32, 32, 160, 32}}) {
    SCOPED_TRACE(::testing::Message() << c.heads << " heads of " << c.head_dim << ", " << c.rotary_dim << " rotating");
    const int rows = 6, half = c.rotary_dim / 2, table_rows = 2048;
    const std::vector<float> host = Random(rows * c.row_width);
    const std::vector<int32_t> positions = {0, 1, 5, 100, 2047, 7};
    std::vector<float> inv_freq(half);
    for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / c.rotary_dim);
    std::vector<float> cos_sin(static_cast<size_t>(table_rows) * c.rotary_dim);  // RopeConfig::CosSinTable's layout
    for (int p = 0; p < table_rows; ++p) {
      for (int i = 0; i < half; ++i) {
        cos_sin[p * c.rotary_dim + i] = std::cos(static_cast<float>(p) * inv_freq[i]);
        cos_sin[p * c.rotary_dim + half + i] = std::sin(static_cast<float>(p) * inv_freq[i]);
      }
    }
    const DeviceMatrix all = Upload(host, rows, c.row_width);
    backend_->Rope(all.Cols(c.first_col, c.heads * c.head_dim), c.heads, c.head_dim, c.rotary_dim, UploadInts(positions),
                   UploadFloats(cos_sin));
    std::vector<float> want = host;
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < c.heads; ++h) {
        const int64_t at = static_cast<int64_t>(r) * c.row_width + c.first_col + h * c.head_dim;
        for (int i = 0; i < half; ++i) {
          const double angle = static_cast<double>(positions[r]) * inv_freq[i];
          want[at + i] = static_cast<float>(host[at + i] * std::cos(angle) - host[at + i + half] * std::sin(angle));
          want[at + i + half] = static_cast<float>(host[at + i + half] * std::cos(angle) + host[at + i] * std::sin(angle));
        }
      }
    }
    // Angles up to 2047 rad: float32 argument reduction costs a few ulps of the angle.
    ExpectClose(all, want, "rope", testing::Tolerance{std::max(testing::ToleranceOf(dtype_).atol, 1e-3f), testing::ToleranceOf(dtype_).rtol});
  }
}

TEST_P(Ops, ActivationsAndGatedActivation) {
  for (Activation act : {Activation::kGeluTanh, Activation::kGeluErf, Activation::kSilu, Activation::kRelu}) {
    const std::vector<float> host = Random(4 * 300, 3.0f), gate_up = Random(4 * 600, 2.0f);
    const DeviceMatrix x = Upload(host, 4, 300);
    backend_->Activate(act, x);
    std::vector<float> want;
    for (float v : host) want.push_back(static_cast<float>(ActivationOf(act, v)));
    // The CPU kernels use vectorised (fast-math) transcendentals: a few float32 ulps.
    ExpectClose(x, want, "activation", testing::Tolerance{std::max(testing::ToleranceOf(dtype_).atol, 1e-5f), std::max(testing::ToleranceOf(dtype_).rtol, 1e-4f)});
    // Widths of 8n take FlashInfer's act-and-mul kernel on the GPU (16-byte loads), others ours.
    for (int inner : {300, 256}) {
      const DeviceMatrix out = Zeros(4, inner);
      backend_->GatedActivate(act, Upload(gate_up, 4, 2 * inner), out);
      std::vector<float> gated;
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < inner; ++c) {
          gated.push_back(static_cast<float>(ActivationOf(act, gate_up[r * 2 * inner + c]) * gate_up[r * 2 * inner + inner + c]));
        }
      }
      ExpectClose(out, gated, absl::StrCat("gated activation of width ", inner).c_str(),
                  testing::Tolerance{std::max(testing::ToleranceOf(dtype_).atol, 1e-5f), std::max(testing::ToleranceOf(dtype_).rtol, 1e-4f)});
    }
  }
}

TEST_P(Ops, AddGatherScatterFill) {
  const std::vector<float> xs = Random(8 * 96), ys = Random(8 * 96);
  const DeviceMatrix x = Upload(xs, 8, 96), y = Upload(ys, 8, 96);
  backend_->Add(x, y);
  std::vector<float> sum(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) sum[i] = xs[i] + ys[i];
  ExpectClose(x, sum, "add");

  const std::vector<float> x_now = Download(x);  // the device's rounding of the sum
  // kNoRow gathers zeros and scatters nothing (the skip rows of sequences without the adapter in a step graph).
  const std::vector<int32_t> rows = {7, Backend::kNoRow, 2, 5};
  const int32_t* device_rows = UploadInts(rows);
  const DeviceMatrix gathered = Upload(Random(4 * 96), 4, 96);
  backend_->GatherRows(x, device_rows, gathered);
  std::vector<float> want_gathered;
  for (int32_t r : rows) {
    if (r == Backend::kNoRow) {
      want_gathered.insert(want_gathered.end(), 96, 0.0f);
    } else {
      want_gathered.insert(want_gathered.end(), &x_now[r * 96], &x_now[r * 96] + 96);
    }
  }
  ExpectClose(gathered, want_gathered, "gather", testing::Tolerance{0.0f, 0.0f});

  std::vector<float> y_want = ys;
  for (bool accumulate : {false, true}) {
    const std::vector<float> src = Random(4 * 96);
    backend_->ScatterRows(Upload(src, 4, 96), device_rows, y, accumulate);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] == Backend::kNoRow) continue;
      for (int c = 0; c < 96; ++c) {
        float& v = y_want[rows[i] * 96 + c];
        v = accumulate ? v + src[i * 96 + c] : src[i * 96 + c];
      }
    }
    ExpectClose(y, y_want, accumulate ? "scatter accumulate" : "scatter");
    y_want = Download(y);
  }
  const std::vector<float> row = Random(96);
  backend_->FillRows(Upload(row, 1, 96), y.Rows(2, 4));
  for (int r = 2; r < 6; ++r) std::copy(row.begin(), row.end(), &y_want[r * 96]);
  ExpectClose(y, y_want, "fill rows", testing::Tolerance{0.0f, 0.0f});
}

// The sum of a block of rows (a mean-pooled embedding's chunk), in float32 from the device's rows: one row, a
// strided column slice, more rows than a block has threads and columns beyond one block's.
TEST_P(Ops, SumRowsAddsEachColumnInFloat32) {
  for (const auto& [rows, cols] : {std::pair{1, 96}, {5, 96}, {300, 40}, {37, 600}}) {
    SCOPED_TRACE(::testing::Message() << rows << " rows of " << cols);
    const DeviceMatrix x = Upload(Random(static_cast<size_t>(rows + 2) * cols), rows + 2, cols);
    const DeviceMatrix block = x.Rows(1, rows);
    const std::vector<float> on_device = Download(x);  // the device's rounding of the rows
    std::vector<double> want(static_cast<size_t>(cols), 0.0);
    for (int r = 1; r <= rows; ++r) {
      for (int c = 0; c < cols; ++c) want[c] += on_device[static_cast<size_t>(r) * cols + c];
    }
    const DeviceMatrix sum = Zeros(1, cols, DType::kF32);
    backend_->SumRows(block, sum);
    ExpectClose(sum, std::vector<float>(want.begin(), want.end()), "sum rows", testing::Tolerance{1e-4f * rows, 1e-5f});
  }
  const DeviceMatrix two_rows = Zeros(2, 8, DType::kF32);  // one row is the sum
  backend_->SumRows(Upload(Random(2 * 8), 2, 8), two_rows);
  EXPECT_NE(std::string(backend_->Synchronize().message()).find("sum rows: src [2, 8] vs sum [2, 8] (F32)"), std::string::npos);
}

TEST_P(Ops, WriteKvLandsInTheNamedSlots) {
  const int kv_heads = 2, head_dim = 32, block_size = 4, num_blocks = 6;
  const int64_t slot_elems = kv_heads * head_dim;
  const std::vector<float> k = Random(5 * slot_elems), v = Random(5 * slot_elems);
  const DeviceMatrix k_cache = Zeros(num_blocks * block_size, slot_elems), v_cache = Zeros(num_blocks * block_size, slot_elems);
  const std::vector<int32_t> slots = {0, 23, 9, 10, 4};
  backend_->WriteKv(Upload(k, 5, slot_elems), Upload(v, 5, slot_elems), UploadInts(slots),
                    PagedKvLayer{k_cache.data, v_cache.data, dtype_, block_size, kv_heads, head_dim});
  std::vector<float> k_want(num_blocks * block_size * slot_elems, 0.0f), v_want = k_want;
  for (size_t i = 0; i < slots.size(); ++i) {
    std::copy(&k[i * slot_elems], &k[i * slot_elems] + slot_elems, &k_want[slots[i] * slot_elems]);
    std::copy(&v[i * slot_elems], &v[i * slot_elems] + slot_elems, &v_want[slots[i] * slot_elems]);
  }
  ExpectClose(k_cache, k_want, "k cache", testing::Tolerance{0.0f, 0.0f});  // a copy: exact
  ExpectClose(v_cache, v_want, "v cache", testing::Tolerance{0.0f, 0.0f});
}

TEST_P(Ops, WriteKvIntoABf16CacheRoundsToNearestEven) {
  if (GetParam() == DeviceKind::kCuda && dtype_ != DType::kBF16) GTEST_SKIP() << "the GPU caches in its compute type, f16 here";
  const int kv_heads = 2, head_dim = 16, block_size = 4, num_blocks = 3;
  const int64_t slot_elems = kv_heads * head_dim;
  std::vector<float> k = Random(3 * slot_elems), v = Random(3 * slot_elems);
  k[0] = 1.0f + 1.0f / 256.0f;  // halfway between two bf16 values: to the even one (1.0)
  k[1] = 1.0f + 3.0f / 256.0f;  // halfway: to the even one (1 + 4/256)
  const DeviceMatrix k_cache = Zeros(num_blocks * block_size, slot_elems, DType::kBF16);
  const DeviceMatrix v_cache = Zeros(num_blocks * block_size, slot_elems, DType::kBF16);
  const std::vector<int32_t> slots = {7, 0, 11};
  backend_->WriteKv(Upload(k, 3, slot_elems), Upload(v, 3, slot_elems), UploadInts(slots),
                    PagedKvLayer{k_cache.data, v_cache.data, DType::kBF16, block_size, kv_heads, head_dim});
  ASSERT_TRUE(backend_->Synchronize().ok());
  std::vector<float> k_want(num_blocks * block_size * slot_elems, 0.0f), v_want = k_want;
  for (size_t i = 0; i < slots.size(); ++i) {
    for (int64_t c = 0; c < slot_elems; ++c) {
      k_want[slots[i] * slot_elems + c] = BFloat16ToFloat(FloatToBFloat16(k[i * slot_elems + c]));
      v_want[slots[i] * slot_elems + c] = BFloat16ToFloat(FloatToBFloat16(v[i * slot_elems + c]));
    }
  }
  EXPECT_EQ(k_want[7 * slot_elems], 1.0f);
  EXPECT_EQ(k_want[7 * slot_elems + 1], 1.0f + 4.0f / 256.0f);
  ExpectClose(k_cache, k_want, "k cache", testing::Tolerance{0.0f, 0.0f});
  ExpectClose(v_cache, v_want, "v cache", testing::Tolerance{0.0f, 0.0f});
}

TEST_P(Ops, WriteKvIntoAnF16CacheSaturatesBeyondItsRange) {
  if (GetParam() == DeviceKind::kCuda) GTEST_SKIP() << "the GPU caches in its compute type (its f16 overflows to inf)";
  const int kv_heads = 1, head_dim = 4, block_size = 2;
  const std::vector<float> k = {1e6f, -1e6f, 0.1f, 65504.0f}, v = {3.0f, -70000.0f, 1e-8f, 2.5f};
  const DeviceMatrix k_cache = Zeros(block_size, head_dim, DType::kF16), v_cache = Zeros(block_size, head_dim, DType::kF16);
  backend_->WriteKv(Upload(k, 1, head_dim), Upload(v, 1, head_dim), UploadInts({1}),
                    PagedKvLayer{k_cache.data, v_cache.data, DType::kF16, block_size, kv_heads, head_dim});
  ASSERT_TRUE(backend_->Synchronize().ok());
  const std::vector<float> got_k = Download(k_cache), got_v = Download(v_cache);
  EXPECT_EQ(got_k[4], 65504.0f);
  EXPECT_EQ(got_k[5], -65504.0f);
  EXPECT_EQ(got_k[6], HalfToFloat(FloatToHalf(0.1f)));
  EXPECT_EQ(got_v[5], -65504.0f);
  EXPECT_EQ(got_v[6], HalfToFloat(FloatToHalf(1e-8f)));  // below the smallest subnormal: zero
  EXPECT_EQ(got_k[0], 0.0f);  // slot 0 untouched
}

TEST_P(Ops, ScoreRowsGiveEachTargetsLogprobAndRankAndTheRowsMostLikelyTokens) {
  // A vocabulary no multiple of a GPU block's threads; ties, masked (-inf) tokens and a row without a target.
  const int rows = 6, vocab = 1037;
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::mt19937 rng(7);
  for (float& v : logits) v = normal(rng);
  const auto at = [&](int r, int token) -> float& { return logits[static_cast<size_t>(r) * vocab + token]; };
  at(1, 700) = at(1, 900) = 20.0f;  // the maximum twice: the argmax is the first; the second ranks 1
  at(2, 5) = at(2, 600) = at(2, 1036) = 1.5f;  // the target tied with two others: ties do not count against it
  for (int token = 0; token < vocab; token += 3) at(3, token) = -std::numeric_limits<float>::infinity();
  at(5, 0) = 30.0f;  // the maximum in the first thread's share
  // Four equal maxima, three of them read by the same GPU thread (ids 256 apart): ordered by id.
  at(0, 10) = at(0, 266) = at(0, 522) = at(0, 11) = 25.0f;
  // Three finite tokens: the alternatives after them are masked tokens in id order.
  for (int token = 0; token < vocab; ++token) {
    if (token != 3 && token != 300 && token != 1000) at(4, token) = -std::numeric_limits<float>::infinity();
  }
  const std::vector<int32_t> targets = {17, 900, 600, 4, -1, vocab - 1};
  auto buffer = backend_->Allocate(logits.size() * sizeof(float));
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  backend_->CopyToDevice((*buffer)->data(), logits.data(), logits.size() * sizeof(float));
  const DeviceMatrix device_logits = DeviceMatrix::Dense((*buffer)->data(), DType::kF32, rows, vocab);
  for (const int top_n : {0, 5, 23}) {  // 23: more than the GPU finds in its one pass (kListedTop)
  SCOPED_TRACE(::testing::Message() << top_n << " alternatives");
  std::vector<RowScore> scores(rows);
  std::vector<TokenLogprob> top(static_cast<size_t>(rows) * top_n);
  ASSERT_TRUE(backend_->ScoreRows(device_logits, targets, scores, top).ok());
  for (int r = 0; r < rows; ++r) {
    SCOPED_TRACE(::testing::Message() << "row " << r);
    const float* row = &at(r, 0);
    const int32_t argmax = static_cast<int32_t>(std::max_element(row, row + vocab) - row);  // the first maximum
    EXPECT_EQ(scores[r].argmax, argmax);
    long double sum = 0;
    for (int t = 0; t < vocab; ++t) sum += std::exp(static_cast<long double>(row[t]) - row[argmax]);
    const auto logprob_of = [&](int token) { return static_cast<double>(row[token] - row[argmax] - std::log(sum)); };
    // The most likely first, the lower id first among equals.
    std::vector<int32_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (int k = 0; k < top_n; ++k) {
      const TokenLogprob& got = top[static_cast<size_t>(r) * top_n + k];
      EXPECT_EQ(got.token, order[k]) << k;
      if (std::isinf(row[order[k]])) {
        EXPECT_EQ(got.logprob, -std::numeric_limits<float>::infinity()) << k;
      } else {
        EXPECT_NEAR(got.logprob, logprob_of(order[k]), 1e-5 * std::max(1.0, std::fabs(logprob_of(order[k])))) << k;
      }
    }
    if (targets[r] < 0) {
      EXPECT_EQ(scores[r].rank, 0);
      EXPECT_EQ(scores[r].logprob, 0.0f);
      continue;
    }
    EXPECT_NEAR(scores[r].logprob, logprob_of(targets[r]), 1e-5 * std::max(1.0, std::fabs(logprob_of(targets[r]))));
    EXPECT_EQ(scores[r].rank, 1 + std::count_if(row, row + vocab, [&](float v) { return v > row[targets[r]]; }));
  }
  EXPECT_EQ(scores[1].rank, 1);
  EXPECT_EQ(scores[1].argmax, 700);
  EXPECT_EQ(scores[5].argmax, 0);
  EXPECT_EQ(scores[0].argmax, 10);
  if (top_n > 0) {
    EXPECT_EQ(top[1 * top_n].token, 700);
    EXPECT_EQ(top[1 * top_n + 1].token, 900) << "equals: the lower id first";
    EXPECT_EQ(top[1].token, 11);
    EXPECT_EQ(top[2].token, 266);
  }
  if (top_n > 3) {
    EXPECT_EQ(top[4 * top_n + 3].token, 0) << "after the finite tokens, the masked ones by id";
  }
  }
  std::vector<float> after(logits.size());
  backend_->CopyToHost(after.data(), (*buffer)->data(), after.size() * sizeof(float));
  ASSERT_TRUE(backend_->Synchronize().ok());
  EXPECT_EQ(after, logits) << "the logits are left as they were";

  std::vector<RowScore> scores(rows);
  const std::vector<int32_t> outside = {17, 900, 600, 4, -1, vocab};
  const absl::Status refused = backend_->ScoreRows(device_logits, outside, scores);
  EXPECT_NE(refused.message().find("target 1037 of row 5 is outside the 1037 columns"), std::string::npos) << refused;
  EXPECT_FALSE(backend_->ScoreRows(device_logits, std::span<const int32_t>(targets).first(5), scores).ok());
  std::vector<TokenLogprob> uneven(static_cast<size_t>(rows) * 2 + 1);
  EXPECT_FALSE(backend_->ScoreRows(device_logits, targets, scores, uneven).ok()) << "the same alternatives for every row";
}

TEST_P(Ops, MisshapenArgumentsAreReportedBySynchronizeAndSkipTheKernel) {
  const std::vector<float> in = Random(2 * 8);
  const DeviceMatrix x = Upload(in, 2, 8), w = Upload(Random(3 * 5), 3, 5), out = Upload(std::vector<float>(6, 7.0f), 2, 3);
  backend_->Linear(x, w, DeviceMatrix{}, out, false);  // in has 8 columns, the weight 5
  const absl::Status status = backend_->Synchronize();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_NE(std::string(status.message()).find("linear: in [2, 8] x weight [3, 5]^T -> out [2, 3]"), std::string::npos) << status;
  EXPECT_TRUE(backend_->Synchronize().ok()) << "the error is reported once";
  ExpectClose(out, std::vector<float>(6, 7.0f), "untouched output", testing::Tolerance{0.0f, 0.0f});
}

TEST_P(Ops, OutOfMemoryIsResourceExhausted) {
  auto huge = backend_->Allocate(size_t{1} << 60);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_TRUE(backend_->Synchronize().ok()) << "a failed allocation must not poison later work";
}

INSTANTIATE_TEST_SUITE_P(Devices, Ops, ::testing::ValuesIn(testing::AllDevices()), testing::DeviceName);

}  // namespace
}  // namespace arach
