// Tokenizers against the 322 cases of refs/tokenizer_refs.jsonl (Hugging Face `tokenizers` output).
#include <fstream>

#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

struct Case {
  std::string text;
  std::vector<int32_t> gpt2;
  std::vector<int32_t> neox;
};

std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  std::ifstream in(testing::FixturePath("refs/tokenizer_refs.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    cases.push_back({j["text"].get<std::string>(), j["gpt2"].get<std::vector<int32_t>>(), j["neox"].get<std::vector<int32_t>>()});
  }
  return cases;
}

void CheckTokenizer(const std::string& model, std::vector<int32_t> Case::*expected_ids) {
  auto tokenizer = LoadTokenizer(testing::FixturePath(model));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::vector<Case> cases = LoadCases();
  ASSERT_EQ(cases.size(), 322u);
  int mismatches = 0;
  for (const Case& c : cases) {
    auto ids = (*tokenizer)->Encode(c.text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    if (*ids != c.*expected_ids && ++mismatches <= 5) ADD_FAILURE() << model << " encodes differently: " << c.text.substr(0, 120);
    auto text = (*tokenizer)->Decode(*ids);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, c.text) << model << " round trip";
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(TokenizerRefs, Gpt2VocabAndMerges) {
  ARACH_REQUIRE_FIXTURES();
  CheckTokenizer("gpt2-tiny", &Case::gpt2);
}

TEST(TokenizerRefs, NeoxTokenizerJson) {
  ARACH_REQUIRE_FIXTURES();
  CheckTokenizer("neox-tiny", &Case::neox);
}

TEST(TokenizerRefs, Llama2cDecodesTheReferenceStory) {
  ARACH_REQUIRE_FIXTURES();
  auto tokenizer = LoadTokenizer(testing::FixturePath("llama-stories260k"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto& notes = testing::RefsJson()["notes"];
  const auto ids = notes["llama_greedy_from_bos_60"].get<std::vector<int32_t>>();
  auto text = (*tokenizer)->Decode(std::span<const int32_t>(ids).subspan(1));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, notes["llama_greedy_text"].get<std::string>());
  // Encoding the story gives back the ids of the pieces the model produced.
  auto encoded = EncodePrompt(**tokenizer, "Once upon a time, there was a little girl named Lily.", 1);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_EQ(std::vector<int32_t>(encoded->begin(), encoded->end()),
            std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(encoded->size())));
}

}  // namespace
}  // namespace arach
