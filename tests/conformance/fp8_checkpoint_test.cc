// FP8 checkpoints in the two published layouts load and compute what their dequantized weights compute.
// For each case, tests/conformance/make_fp8_checkpoint.py (numpy; its own safetensors writer and e4m3
// rounding) writes an FP8 copy of a fixture model in one layout and granularity, and the float32 checkpoint of
// the same dequantized weights. The FP8 model's logits must equal the float32 model's (the same products,
// fp8 * scale in float32, so only the summation order could differ: 1e-4) under base, ARACH and ARACH+skip,
// and stay near the original model's (e4m3 keeps 3 mantissa bits: measured 0.17-0.48, llama-stories260k 1.18;
// the bound of 2 only catches a misread scale, which multiplies weights by hundreds). With --weight_dtype bf16 the FP8 weights become the same bf16 matrices.
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/model/model_config.h"
#include "gtest/gtest.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

struct Fp8Case {
  std::string model;
  std::vector<std::string> layout_args;  // make_fp8_checkpoint.py's layout flags
  std::string expected_description;     // WeightQuantization::Describe() of the written config
  std::string name;
};

void PrintTo(const Fp8Case& c, std::ostream* os) { *os << c.name; }

// Runs the generator into <tmp>/fp8 and <tmp>/dequant.
void WriteCheckpoints(const Fp8Case& c, const testing::ScopedTempDir& tmp) {
  const std::string script = absl::StrCat(testing::SourceDir(), "/tests/conformance/make_fp8_checkpoint.py");
  const std::string command =
      absl::StrCat("/usr/bin/python3 '", script, "' '", testing::FixturePath(c.model), "' '", tmp.File("fp8"), "' '",
                   tmp.File("dequant"), "' ", absl::StrJoin(c.layout_args, " "), " > '", tmp.File("log"), "' 2>&1");
  ASSERT_EQ(std::system(command.c_str()), 0) << command << " failed (python3-numpy comes with scripts/install-deps.sh --test)";
}

class Fp8Checkpoint : public ::testing::TestWithParam<Fp8Case> {
 protected:
  void SetUp() override {
    ARACH_REQUIRE_FIXTURES();
    WriteCheckpoints(GetParam(), tmp_);
  }
  absl::StatusOr<std::unique_ptr<ModelRunner>> Load(const std::string& dir, WeightDTypeChoice dtype = WeightDTypeChoice::kF32) {
    testing::FixtureOptions options;
    options.model_dir = dir;
    options.adapter = has_adapter();
    options.weight_dtype = dtype;
    return testing::LoadFixtureRunner(GetParam().model, options);
  }
  bool has_adapter() const { return GetParam().model != "llama-stories260k"; }
  std::vector<Variant> Variants() const {
    std::vector<Variant> variants = {testing::VariantOfRef("base"), testing::VariantOfRef("arach")};
    if (has_adapter()) variants.push_back(testing::VariantOfRef("arach_skip"));
    return variants;
  }
  testing::ScopedTempDir tmp_;
};

TEST_P(Fp8Checkpoint, ConfigDescribesTheQuantization) {
  auto config = LoadModelConfig(tmp_.File("fp8"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->quantization.Describe(), GetParam().expected_description);
}

TEST_P(Fp8Checkpoint, LogitsEqualTheDequantizedFloat32Model) {
  auto fp8 = Load(tmp_.File("fp8"));
  ASSERT_TRUE(fp8.ok()) << fp8.status();
  auto dequant = Load(tmp_.File("dequant"));
  ASSERT_TRUE(dequant.ok()) << dequant.status();
  auto original = Load(testing::FixturePath(GetParam().model));
  ASSERT_TRUE(original.ok()) << original.status();
  OfflineSession fp8_session(**fp8), dequant_session(**dequant), original_session(**original);
  const std::vector<int32_t> prompt = testing::RefPrompt(GetParam().model, "p48");
  for (const Variant& variant : Variants()) {
    auto a = fp8_session.Logits(prompt, 0, variant);
    ASSERT_TRUE(a.ok()) << a.status();
    auto b = dequant_session.Logits(prompt, 0, variant);
    ASSERT_TRUE(b.ok()) << b.status();
    auto c = original_session.Logits(prompt, 0, variant);
    ASSERT_TRUE(c.ok()) << c.status();
    const float vs_dequant = testing::MaxAbsDiff(a->data(), b->data(), a->size());
    const float vs_original = testing::MaxAbsDiff(a->data(), c->data(), a->size());
    EXPECT_LE(vs_dequant, 1e-4f) << variant.Name();
    EXPECT_LE(vs_original, 2.0f) << variant.Name();
    std::cout << "[fp8] " << GetParam().name << " " << variant.Name() << ": max |logit diff| vs dequantized float32 "
              << vs_dequant << ", vs the original weights " << vs_original << "\n";
  }
}

TEST_P(Fp8Checkpoint, Bf16WeightsAreTheDequantizedModelsBf16Weights) {
  auto fp8 = Load(tmp_.File("fp8"), WeightDTypeChoice::kBF16);
  ASSERT_TRUE(fp8.ok()) << fp8.status();
  auto dequant = Load(tmp_.File("dequant"), WeightDTypeChoice::kBF16);
  ASSERT_TRUE(dequant.ok()) << dequant.status();
  EXPECT_EQ((*fp8)->weight_bytes(), (*dequant)->weight_bytes());
  OfflineSession fp8_session(**fp8), dequant_session(**dequant);
  const std::vector<int32_t> prompt = testing::RefPrompt(GetParam().model, "p7");
  auto a = fp8_session.Logits(prompt);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = dequant_session.Logits(prompt);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_LE(testing::MaxAbsDiff(a->data(), b->data(), a->size()), 1e-4f);
}

std::vector<Fp8Case> Cases() {
  return {
      {"qwen3-tiny", {"--layout", "hf-fp8", "--block", "32,32"}, "FP8 e4m3 (Hugging Face fp8, 32x32 blocks)", "qwen3_hf_fp8_32x32"},
      {"llama3-tiny", {"--layout", "hf-fp8", "--block", "128,128"}, "FP8 e4m3 (Hugging Face fp8, 128x128 blocks)",
       "llama3_sharded_hf_fp8_128x128"},
      {"qwen2-tiny", {"--layout", "compressed-tensors", "--strategy", "channel"},
       "FP8 e4m3 (compressed-tensors float-quantized, one scale per output row)", "qwen2_compressed_channel"},
      {"neox-tiny", {"--layout", "compressed-tensors", "--strategy", "tensor"},
       "FP8 e4m3 (compressed-tensors float-quantized, one scale per tensor)", "neox_compressed_tensor"},
      {"gpt2-tiny", {"--layout", "compressed-tensors", "--strategy", "group", "--group", "32"},
       "FP8 e4m3 (compressed-tensors float-quantized, 1x32 blocks)", "gpt2_compressed_group32"},
      {"llama-stories260k", {"--layout", "compressed-tensors", "--strategy", "block", "--block", "16,16"},
       "FP8 e4m3 (compressed-tensors float-quantized, 16x16 blocks)", "stories_compressed_block16"},
  };
}

INSTANTIATE_TEST_SUITE_P(Layouts, Fp8Checkpoint, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Fp8Case>& info) { return info.param.name; });

}  // namespace
}  // namespace arach
