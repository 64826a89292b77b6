#include "engine/model/safetensors.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include "engine/model/checkpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A safetensors file made by hand: 8-byte length, header, data.
std::string RawFile(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST(Safetensors, WritesAndReadsBackEveryFloatType) {
  testing::ScopedTempDir dir;
  const std::vector<float> values = {1.0f, -2.5f, 0.1f, 65504.0f, 1e-6f, 3.0f};
  std::vector<uint16_t> half(values.size()), bf16(values.size());
  ConvertFromFloat(DType::kF16, values.data(), values.size(), half.data());
  ConvertFromFloat(DType::kBF16, values.data(), values.size(), bf16.data());
  ASSERT_TRUE(WriteSafetensors(dir.File("a.safetensors"), {{"f32", DType::kF32, {2, 3}, values.data()},
                                                            {"f16", DType::kF16, {6}, half.data()},
                                                            {"bf16", DType::kBF16, {3, 2}, bf16.data()}},
                               {{"note", "hello"}})
                  .ok());
  auto checkpoint = Checkpoint::OpenFile(dir.File("a.safetensors"));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto f32 = (*checkpoint)->ReadFloat("f32", {2, 3});
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(*f32, values);
  auto f16 = (*checkpoint)->ReadFloat("f16");
  ASSERT_TRUE(f16.ok());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_NEAR((*f16)[i], values[i], std::abs(values[i]) * 1e-3 + 1e-7);
  auto b16 = (*checkpoint)->ReadFloat("bf16");
  ASSERT_TRUE(b16.ok());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_NEAR((*b16)[i], values[i], std::abs(values[i]) * 8e-3);
  auto file = SafetensorsFile::Open(dir.File("a.safetensors"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->metadata().at("note"), "hello");
}

TEST(Safetensors, RejectsTruncatedAndCorruptHeaders) {
  testing::ScopedTempDir dir;
  struct Case {
    std::string bytes;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"abc", "fewer than the 8-byte length prefix"},
      {RawFile("{}", "").substr(0, 8) + "{", "exceeds the"},  // header length says 2, one byte present
      {RawFile("{not json", ""), "not valid JSON"},
      {RawFile("[1,2]", ""), "not a JSON object"},
      {RawFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"), "outside the 4 data bytes"},
      {RawFile(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"), "needs 12"},
      {RawFile(R"({"w":{"dtype":"F8_E5M2","shape":[8],"data_offsets":[0,8]}})", "12345678"), "unsupported dtype \"F8_E5M2\""},
      {RawFile(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "1234"), "not a non-negative integer"},
      {RawFile(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "1234"), "missing string field \"dtype\""},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.File("bad" + std::to_string(i) + ".safetensors");
    WriteBytes(path, cases[i].bytes);
    auto file = SafetensorsFile::Open(path);
    ASSERT_FALSE(file.ok()) << "case " << i;
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << "case " << i;
    EXPECT_THAT(std::string(file.status().message()), HasSubstr(cases[i].expected)) << "case " << i;
    EXPECT_THAT(std::string(file.status().message()), HasSubstr(path)) << "the error names the file";
  }
}

TEST(Checkpoint, ReadsShardsThroughTheIndexAndNamesMissingTensors) {
  testing::ScopedTempDir dir;
  const std::vector<float> a = {1, 2}, b = {3, 4, 5};
  ASSERT_TRUE(WriteSafetensors(dir.File("model-00001-of-00002.safetensors"), {{"a", DType::kF32, {2}, a.data()}}).ok());
  ASSERT_TRUE(WriteSafetensors(dir.File("model-00002-of-00002.safetensors"), {{"b", DType::kF32, {3}, b.data()}}).ok());
  std::ofstream(dir.File("model.safetensors.index.json"))
      << R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
  auto checkpoint = Checkpoint::Open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ(*(*checkpoint)->ReadFloat("b"), b);
  EXPECT_THAT((*checkpoint)->FileOf("a"), HasSubstr("model-00001-of-00002"));

  auto missing = (*checkpoint)->ReadFloat("c");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("\"c\""));

  auto wrong_shape = (*checkpoint)->ReadFloat("b", {2, 2});
  EXPECT_EQ(wrong_shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_shape.status().message()), HasSubstr("model-00002-of-00002.safetensors: tensor \"b\" has shape [3], expected [2, 2]"));
}

TEST(Checkpoint, IndexThatPromisesAMissingTensorIsAnError) {
  testing::ScopedTempDir dir;
  const std::vector<float> a = {1, 2};
  ASSERT_TRUE(WriteSafetensors(dir.File("shard.safetensors"), {{"a", DType::kF32, {2}, a.data()}}).ok());
  std::ofstream(dir.File("model.safetensors.index.json")) << R"({"weight_map":{"a":"shard.safetensors","z":"shard.safetensors"}})";
  auto checkpoint = Checkpoint::Open(dir.path());
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_THAT(std::string(checkpoint.status().message()), HasSubstr("tensor \"z\" listed in the index is missing"));
}

TEST(Checkpoint, IntegerWeightsAreRefusedByName) {
  testing::ScopedTempDir dir;
  const std::vector<int32_t> ids = {1, 2};
  ASSERT_TRUE(WriteSafetensors(dir.File("model.safetensors"), {{"ids", DType::kI32, {2}, ids.data()}}).ok());
  auto checkpoint = Checkpoint::Open(dir.path());
  ASSERT_TRUE(checkpoint.ok());
  auto read = (*checkpoint)->ReadFloat("ids");
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("tensor \"ids\" has dtype I32"));
}

TEST(DType, HalfAndBFloat16RoundTrip) {
  for (float v : {0.0f, -0.0f, 1.0f, -1.5f, 0.333333f, 65504.0f, 6.1e-5f, 5.96e-8f, 1e-3f}) {
    EXPECT_NEAR(HalfToFloat(FloatToHalf(v)), v, std::abs(v) * 1e-3f + 6e-8f) << v;
    EXPECT_NEAR(BFloat16ToFloat(FloatToBFloat16(v)), v, std::abs(v) * 4e-3f) << v;
  }
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);
}

// QuantizeRowInt8 (int8 weights at load, activations per call) against std::lround, ties included.
TEST(DType, Int8RowQuantizationRoundsAsLroundAndFlagsNonFiniteRows) {
  // max |x| = 127, so the scale is 1 and each code is x rounded: halves go away from zero.
  const std::vector<float> ties = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 126.5f, -126.5f, 0.49999997f, -1.5f, 0.0f, -0.0f};
  std::vector<int8_t> codes(ties.size());
  EXPECT_EQ(QuantizeRowInt8(ties.data(), static_cast<int64_t>(ties.size()), codes.data()), 1.0f);
  EXPECT_EQ(codes, (std::vector<int8_t>{127, 3, -3, 1, -1, 127, -127, 0, -2, 0, 0}));
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(1000);
  for (float& v : row) v = normal(random);
  codes.resize(row.size());
  const float scale = QuantizeRowInt8(row.data(), static_cast<int64_t>(row.size()), codes.data());
  float amax = 0.0f;
  for (float v : row) amax = std::max(amax, std::fabs(v));
  EXPECT_EQ(scale, amax / 127.0f);
  for (size_t c = 0; c < row.size(); ++c) {
    EXPECT_EQ(codes[c], std::clamp(std::lround(row[c] * (1.0f / scale)), -127L, 127L)) << "column " << c << ": " << row[c];
  }
  const std::vector<float> zeros(5, 0.0f);
  EXPECT_EQ(QuantizeRowInt8(zeros.data(), 5, codes.data()), 1.0f) << "an all-zero row has scale 1";
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> with_bad = {1.0f, bad, -3.0f};
    std::vector<int8_t> bad_codes(3, 9);
    EXPECT_TRUE(std::isnan(QuantizeRowInt8(with_bad.data(), 3, bad_codes.data()))) << bad;
    EXPECT_EQ(bad_codes, (std::vector<int8_t>{0, 0, 0})) << bad;
  }
}

}  // namespace
}  // namespace arach
