// The one variant parser (names, NAME@OFFSET, weighted lists), the weighted draw, variant validation and
// the request checks every API shares (engine/request.h), with the caller's field names.
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "engine/variant/variant.h"
#include "engine/variant/variant_mix.h"
#include "engine/request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

TEST(VariantNames, ParseEveryNameAndOnlyThose) {
  for (const auto& [name, arach, skip] : std::vector<std::tuple<std::string, bool, bool>>{
           {"base", false, false}, {"arach", true, false}, {"skip", false, true}, {"arach+skip", true, true}, {"skip+arach", true, true}}) {
    auto v = ParseVariantName(name);
    ASSERT_TRUE(v.ok()) << name;
    EXPECT_EQ(v->arach, arach) << name;
    EXPECT_EQ(v->skip, skip) << name;
    EXPECT_EQ(v->arach_offset, Variant::kDefaultArachOffset);
  }
  EXPECT_THAT(std::string(ParseVariantName("hub").status().message()), HasSubstr("\"hub\" is not one of base, arach, skip, arach+skip"));
}

TEST(VariantChoice, OffsetAfterTheAt) {
  auto plain = ParseVariantChoice("arach");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->offset.has_value());
  auto zero = ParseVariantChoice("arach+skip@0");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->offset, 0.0f);
  EXPECT_EQ(zero->variant.arach_offset, 0.0f);
  EXPECT_TRUE(zero->variant.skip);
  EXPECT_THAT(std::string(ParseVariantChoice("arach@x").status().message()), HasSubstr("not a finite number"));
  EXPECT_THAT(std::string(ParseVariantChoice("arach@inf").status().message()), HasSubstr("not a finite number"));
  EXPECT_FALSE(ParseVariantChoice("beta@1").ok());
}

TEST(VariantMix, WeightsDefaultToOneAndErrorsNameTheEntry) {
  auto mix = ParseVariantMix("base=30, arach@0=70,skip");
  ASSERT_TRUE(mix.ok()) << mix.status();
  ASSERT_EQ(mix->size(), 3u);
  EXPECT_EQ((*mix)[0].label, "base");
  EXPECT_EQ((*mix)[1].label, "arach@0");
  EXPECT_EQ((*mix)[1].weight, 70);
  EXPECT_EQ((*mix)[1].choice.offset, 0.0f);
  EXPECT_EQ((*mix)[2].weight, 1);
  EXPECT_THAT(std::string(ParseVariantMix("base=x").status().message()), HasSubstr("\"base=x\" is not VARIANT[=WEIGHT]"));
  EXPECT_THAT(std::string(ParseVariantMix("base=-1").status().message()), HasSubstr("weight >= 0"));
  EXPECT_THAT(std::string(ParseVariantMix("base=0,arach=0").status().message()), HasSubstr("sum to zero"));
  EXPECT_THAT(std::string(ParseVariantMix("").status().message()), HasSubstr("no variants"));
  EXPECT_FALSE(ParseVariantMix("base=1=2").ok());
}

TEST(VariantMix, PickWeightedFollowsTheWeightsAndSkipsZeroArms) {
  const std::vector<double> weights = {1, 0, 3};
  EXPECT_EQ(PickWeighted(weights, 0.0), 0u);
  EXPECT_EQ(PickWeighted(weights, 0.2499), 0u);
  EXPECT_EQ(PickWeighted(weights, 0.25), 2u);
  EXPECT_EQ(PickWeighted(weights, 0.999999999), 2u);
  EXPECT_EQ(PickWeighted(std::vector<double>{2, 0}, 1.0), 0u) << "rounding at the end never lands on a zero-weight arm";
  std::map<size_t, int> counts;
  for (int i = 0; i < 4000; ++i) ++counts[PickWeighted(weights, (i + 0.5) / 4000)];
  EXPECT_EQ(counts[0], 1000);
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[2], 3000);
}

TEST(VariantValidate, AdapterAndOffsetWithTheCallersNames) {
  Variant skip;
  skip.skip = true;
  EXPECT_TRUE(skip.Validate(/*has_adapter=*/true).ok());
  const absl::Status no_adapter = skip.Validate(false);
  EXPECT_EQ(no_adapter.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_adapter.message()), HasSubstr("--adapter"));
  Variant bad;
  bad.arach = true;
  bad.arach_offset = NAN;
  const auto grpc_names = [](absl::string_view field) { return absl::StrCat("variant.", field); };
  EXPECT_THAT(std::string(bad.Validate(false, grpc_names).message()), HasSubstr("variant.arach_offset: nan is not finite"));
  bad.arach = false;
  EXPECT_THAT(std::string(bad.Validate(false, grpc_names).message()), HasSubstr("variant.arach_offset: nan is not finite"))
      << "a non-finite offset is refused even where ARACH is off and it would go unused";
  bad.arach_offset = 3.0f;
  EXPECT_TRUE(bad.Validate(false).ok()) << "a finite offset without ARACH is not used";
}

ModelConfig SmallConfig() {
  ModelConfig c;
  c.vocab_size = 100;
  c.max_positions = 16;
  return c;
}

// The context rule, shared by the engine (ValidateRequest) and the chat endpoints' fitting of a conversation.
TEST(ValidateRequest, ThePromptFitsTheContextWithRoomForOneTokenToGenerate) {
  const ModelConfig c = SmallConfig();
  EXPECT_TRUE(CheckPromptFitsContext(15, RequestKind::kGenerate, c, "messages").ok());
  EXPECT_EQ(CheckPromptFitsContext(16, RequestKind::kGenerate, c, "messages").message(),
            "messages: the prompt's 16 tokens leave no room in the model's context of 16 tokens");
  EXPECT_TRUE(CheckPromptFitsContext(16, RequestKind::kScore, c, "prompt").ok());
  EXPECT_EQ(CheckPromptFitsContext(17, RequestKind::kScore, c, "prompt").message(),
            "prompt: the prompt's 17 tokens exceed the model's context of 16");
  EngineRequest r;
  r.kind = RequestKind::kScore;
  r.prompt = std::vector<int32_t>(17, 1);
  EXPECT_EQ(ValidateRequest(r, c, false, c.max_positions).message(), "prompt: the prompt's 17 tokens exceed the model's context of 16");
}

TEST(ValidateRequest, GenerateAndScoreRules) {
  const ModelConfig c = SmallConfig();
  EngineRequest r;
  EXPECT_THAT(std::string(ValidateRequest(r, c, false, c.max_positions).message()), HasSubstr("prompt: empty"));
  r.prompt = {1, 100};
  EXPECT_THAT(std::string(ValidateRequest(r, c, false, c.max_positions).message()), HasSubstr("prompt[1]: token id 100 is outside the vocabulary [0, 100)"));
  r.prompt = std::vector<int32_t>(16, 1);
  EXPECT_THAT(std::string(ValidateRequest(r, c, false, c.max_positions).message()), HasSubstr("leave no room in the model's context of 16"));
  r.kind = RequestKind::kScore;
  EXPECT_TRUE(ValidateRequest(r, c, false, c.max_positions).ok()) << "a score fills the context exactly";
  r.prompt = {1};
  EXPECT_THAT(std::string(ValidateRequest(r, c, false, c.max_positions).message()), HasSubstr("at least two tokens"));
  r.prompt = {1, 2};
  r.sampling.temperature = -1;  // sampling does not apply to scoring
  EXPECT_TRUE(ValidateRequest(r, c, false, c.max_positions).ok());
  r.kind = RequestKind::kGenerate;
  const auto names = [](absl::string_view field) { return field == "temperature" ? std::string("sampling.temperature") : std::string(field); };
  EXPECT_THAT(std::string(ValidateRequest(r, c, false, c.max_positions, names).message()), HasSubstr("sampling.temperature"));
}

// An input to embed fits the context and the embedding model's own limit (sentence_bert_config.json's
// max_seq_length); other requests are bound by the context alone.
TEST(ValidateRequest, AnInputToEmbedFitsTheEmbeddingModelsLimit) {
  const ModelConfig c = SmallConfig();
  EngineRequest r;
  r.kind = RequestKind::kEmbed;
  r.prompt = std::vector<int32_t>(8, 1);
  EXPECT_TRUE(ValidateRequest(r, c, false, 8).ok());
  r.prompt.push_back(1);
  EXPECT_EQ(ValidateRequest(r, c, false, 8).message(),
            "prompt: the input's 9 tokens exceed the 8 the embedding model takes (max_seq_length in its sentence_bert_config.json)");
  EXPECT_TRUE(ValidateRequest(r, c, false, c.max_positions).ok());
  r.kind = RequestKind::kScore;
  EXPECT_TRUE(ValidateRequest(r, c, false, 8).ok()) << "a score is bound by the context only";
}

}  // namespace
}  // namespace arach
