// FP8 e4m3 decoding, config.json's quantization_config, and dequantizing a weight with its scales (the
// layouts end to end on real models: tests/conformance/fp8_checkpoint_test.cc).
#include "engine/model/weight_quantization.h"

#include <cmath>

#include "engine/model/model_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

TEST(Float8E4M3, DecodesEveryKindOfCode) {
  EXPECT_EQ(Float8E4M3ToFloat(0x00), 0.0f);
  EXPECT_EQ(Float8E4M3ToFloat(0x38), 1.0f);    // exponent 7 = bias
  EXPECT_EQ(Float8E4M3ToFloat(0xb8), -1.0f);
  EXPECT_EQ(Float8E4M3ToFloat(0x39), 1.125f);  // one mantissa step
  EXPECT_EQ(Float8E4M3ToFloat(0x7e), 448.0f);  // the largest finite
  EXPECT_EQ(Float8E4M3ToFloat(0x08), std::ldexp(1.0f, -6));  // the smallest normal
  EXPECT_EQ(Float8E4M3ToFloat(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_EQ(Float8E4M3ToFloat(0x07), 7.0f * std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(Float8E4M3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(Float8E4M3ToFloat(0xff)));
  EXPECT_EQ(Float8E4M3ToFloat(0x78), 256.0f);  // no infinities: exponent 15 is a normal exponent
  // Strictly increasing over the non-negative finite codes.
  for (int code = 1; code < 0x7f; ++code) EXPECT_LT(Float8E4M3ToFloat(code - 1), Float8E4M3ToFloat(code)) << code;
}

absl::StatusOr<WeightQuantization> Parse(const std::string& text) {
  return ParseWeightQuantization(nlohmann::json::parse(text), "m/config.json");
}

TEST(WeightQuantization, ParsesBothFp8Layouts) {
  auto hf = Parse(R"({"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic","weight_block_size":[128,128]})");
  ASSERT_TRUE(hf.ok()) << hf.status();
  EXPECT_EQ(hf->method, WeightQuantization::Method::kFp8);
  EXPECT_EQ(hf->ScaleName("l.q_proj.weight"), "l.q_proj.weight_scale_inv");
  EXPECT_EQ(hf->Describe(), "FP8 e4m3 (Hugging Face fp8, 128x128 blocks)");
  auto per_tensor = Parse(R"({"quant_method":"fp8","activation_scheme":"static"})");
  ASSERT_TRUE(per_tensor.ok()) << per_tensor.status();
  EXPECT_EQ(per_tensor->granularity, WeightQuantization::Granularity::kTensor);

  const std::string group = R"({"quant_method":"compressed-tensors","format":"float-quantized","ignore":["lm_head"],
      "config_groups":{"group_0":{"targets":["Linear"],"weights":{"num_bits":8,"type":"float","symmetric":true,
      "strategy":"STRATEGY","group_size":64,"block_structure":[64,32]}}}})";
  for (const auto& [strategy, described] : {std::pair{"tensor", "one scale per tensor"}, {"channel", "one scale per output row"},
                                           {"group", "1x64 blocks"}, {"block", "64x32 blocks"}}) {
    std::string text = group;
    text.replace(text.find("STRATEGY"), 8, strategy);
    auto ct = Parse(text);
    ASSERT_TRUE(ct.ok()) << ct.status();
    EXPECT_EQ(ct->method, WeightQuantization::Method::kCompressedTensorsFloat);
    EXPECT_EQ(ct->ScaleName("w.weight"), "w.weight_scale");
    EXPECT_EQ(ct->Describe(), std::string("FP8 e4m3 (compressed-tensors float-quantized, ") + described + ")");
  }
}

TEST(WeightQuantization, UnsupportedSchemesAreRefusedNamingThem) {
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {R"({"quant_method":"gptq","bits":4})", "\"quantization_config.quant_method\" \"gptq\" is not supported"},
      {R"({"quant_method":"awq"})", "\"awq\" is not supported"},
      {R"({"load_in_4bit":true})", "\"quantization_config.quant_method\" \"\" is not supported"},
      {R"({"quant_method":"fp8","fmt":"e5m2"})", "\"quantization_config.fmt\" \"e5m2\" is not supported"},
      {R"({"quant_method":"fp8","weight_block_size":[128]})", "\"quantization_config.weight_block_size\" must be two positive"},
      {R"({"quant_method":"compressed-tensors","format":"pack-quantized","config_groups":{}})",
       "\"quantization_config.format\" \"pack-quantized\" is not supported"},
      {R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"g":{"weights":
          {"num_bits":4,"type":"int","strategy":"group","group_size":128}}}})",
       "\"quantization_config.config_groups.g.weights\" quantizes weights as int with 4 bits"},
      {R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"g":{"weights":
          {"num_bits":8,"type":"float","strategy":"token"}}}})",
       "\"quantization_config.config_groups.g.weights.strategy\" \"token\" is not supported"},
      {R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"g":{"weights":
          {"num_bits":8,"type":"float","strategy":"channel","symmetric":false}}}})", "symmetric\" false"},
  };
  for (const Case& c : cases) {
    auto q = Parse(c.text);
    ASSERT_FALSE(q.ok()) << c.text;
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(q.status().message(), HasSubstr(c.expected)) << c.text;
    EXPECT_THAT(q.status().message(), HasSubstr("m/config.json")) << c.text;
  }
}

TEST(WeightQuantization, ConfigJsonCarriesItAndRefusesAnUnknownMethodAtLoad) {
  const std::string common = R"("model_type":"llama","hidden_size":64,"num_hidden_layers":1,"num_attention_heads":2,
      "intermediate_size":128,"vocab_size":100,"max_position_embeddings":64)";
  auto plain = ParseModelConfig("{" + common + "}", "c.json");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->quantization.quantized());
  auto fp8 = ParseModelConfig("{" + common + R"(,"quantization_config":{"quant_method":"fp8","weight_block_size":[16,16]}})", "c.json");
  ASSERT_TRUE(fp8.ok()) << fp8.status();
  EXPECT_EQ(fp8->quantization.block_rows, 16);
  auto bnb = ParseModelConfig("{" + common + R"(,"quantization_config":{"quant_method":"bitsandbytes"}})", "c.json");
  ASSERT_FALSE(bnb.ok());
  EXPECT_THAT(bnb.status().message(), HasSubstr("\"bitsandbytes\" is not supported"));
}

// A 3x5 FP8 weight with 2x2 blocks: a 2x3 grid, the last row and column of blocks partial.
class Fp8Dequantize : public ::testing::Test {
 protected:
  void Write(const std::vector<TensorToWrite>& extra) {
    std::vector<TensorToWrite> tensors = {{"w", DType::kF8E4M3, {3, 5}, codes_.data()}};
    tensors.insert(tensors.end(), extra.begin(), extra.end());
    ASSERT_TRUE(WriteSafetensors(dir_.File("m.safetensors"), tensors).ok());
    auto checkpoint = Checkpoint::OpenFile(dir_.File("m.safetensors"));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    checkpoint_ = std::move(*checkpoint);
  }
  WeightQuantization Block2x2() const {
    WeightQuantization q;
    q.method = WeightQuantization::Method::kFp8;
    q.granularity = WeightQuantization::Granularity::kBlock;
    q.block_rows = q.block_cols = 2;
    return q;
  }
  // 1.0, 1.125, -1.0, 2.0, 0.5 on each row.
  std::vector<uint8_t> codes_ = {0x38, 0x39, 0xb8, 0x40, 0x30, 0x38, 0x39, 0xb8, 0x40, 0x30, 0x38, 0x39, 0xb8, 0x40, 0x30};
  testing::ScopedTempDir dir_;
  std::unique_ptr<Checkpoint> checkpoint_;
};

TEST_F(Fp8Dequantize, EachBlockTakesItsScale) {
  const std::vector<float> scales = {1, 2, 4, 8, 16, 32};  // [2, 3]
  Write({{"w_scale_inv", DType::kF32, {2, 3}, scales.data()}});
  auto w = ReadWeightFloat(*checkpoint_, "w", {3, 5}, Block2x2());
  ASSERT_TRUE(w.ok()) << w.status();
  const std::vector<float> expected = {1, 1.125f, -2, 4, 2,  // row 0: blocks 0, 0, 1, 1, 2
                                       1, 1.125f, -2, 4, 2,  // row 1
                                       8, 9, -16, 32, 16};   // row 2: blocks 3, 3, 4, 4, 5
  EXPECT_EQ(*w, expected);
}

TEST_F(Fp8Dequantize, PerChannelAndPerTensorScales) {
  const std::vector<float> rows = {1, 2, 4};
  const std::vector<float> one = {0.5f};
  Write({{"w_scale", DType::kF32, {3, 1}, rows.data()}, {"v_scale", DType::kF32, {1}, one.data()},
         {"v", DType::kF8E4M3, {1, 2}, codes_.data()}});
  WeightQuantization channel;
  channel.method = WeightQuantization::Method::kCompressedTensorsFloat;
  channel.granularity = WeightQuantization::Granularity::kChannel;
  auto w = ReadWeightFloat(*checkpoint_, "w", {}, channel);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)[4], 0.5f);
  EXPECT_EQ((*w)[10], 4.0f);
  WeightQuantization tensor = channel;
  tensor.granularity = WeightQuantization::Granularity::kTensor;
  auto v = ReadWeightFloat(*checkpoint_, "v", {1, 2}, tensor);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, (std::vector<float>{0.5f, 0.5625f}));
}

TEST_F(Fp8Dequantize, ErrorsNameTheFileAndTensor) {
  const std::vector<float> wrong = {1, 2, 3, 4};
  Write({{"w_scale_inv", DType::kF32, {2, 2}, wrong.data()}});
  auto bad_shape = ReadWeightFloat(*checkpoint_, "w", {3, 5}, Block2x2());
  ASSERT_FALSE(bad_shape.ok());
  EXPECT_THAT(bad_shape.status().message(), HasSubstr("m.safetensors: tensor \"w_scale_inv\" has shape [2, 2], expected [2, 3]"));
  WeightQuantization compressed = Block2x2();
  compressed.method = WeightQuantization::Method::kCompressedTensorsFloat;
  auto missing = ReadWeightFloat(*checkpoint_, "w", {3, 5}, compressed);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("tensor \"w\" is F8_E4M3 but its scale \"w_scale\" is missing"));
  auto unscaled = ReadWeightFloat(*checkpoint_, "w", {3, 5}, WeightQuantization{});
  ASSERT_FALSE(unscaled.ok());
  EXPECT_THAT(unscaled.status().message(), HasSubstr("m.safetensors: tensor \"w\" is F8_E4M3 but config.json has no quantization_config"));
  auto other_shape = ReadWeightFloat(*checkpoint_, "w", {5, 3}, Block2x2());
  ASSERT_FALSE(other_shape.ok());
  EXPECT_THAT(other_shape.status().message(), HasSubstr("tensor \"w\" has shape [3, 5], expected [5, 3]"));
}

}  // namespace
}  // namespace arach
