// Fill-in-the-middle prompts (server/fill_in_middle.h) on real vocabularies: Qwen3's (<|fim_prefix|> and kin, added
// tokens), llama3-tiny's (none: a suffix is refused, naming it), and llama3-tiny's with reserved special tokens renamed
// to StarCoder's and DeepSeek-Coder's markers (no such fixture is at hand), each found as its family; the tokens that
// end the gap's text are those of the vocabulary (Qwen3's padding, repository and file markers and the three markers).
#include "server/fill_in_middle.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "engine/core/mapped_file.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/temp_dir.h"

namespace arach::server {
namespace {

// llama3-tiny's tokenizer with three reserved special tokens renamed `prefix`, `suffix` and `middle`.
absl::StatusOr<std::unique_ptr<Tokenizer>> LlamaWithMarkers(const testing::ScopedTempDir& dir, const std::string& prefix,
                                                           const std::string& suffix, const std::string& middle) {
  for (const std::string name : {"tokenizer.json", "tokenizer_config.json"}) {
    absl::StatusOr<std::string> text = ReadFileToString(testing::FixturePath("llama3-tiny/" + name));
    if (!text.ok()) return text.status();
    std::ofstream(dir.File(name)) << absl::StrReplaceAll(*text, {{"<|reserved_special_token_20|>", prefix},
                                                                 {"<|reserved_special_token_21|>", suffix},
                                                                 {"<|reserved_special_token_22|>", middle}});
  }
  return LoadTokenizer(dir.path());
}

TEST(FillInMiddle, TheModelsOwnMarkersGoAroundThePrefixAndSuffix) {
  ARACH_REQUIRE_FIXTURES();
  auto qwen = LoadTokenizer(testing::FixturePath("qwen3-tiny"));
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  auto fim = FillInMiddlePrompt(**qwen, "def add(a, b):\n    ", "\n\nprint(add(1, 2))", "suffix");
  ASSERT_TRUE(fim.ok()) << fim.status();
  EXPECT_EQ(fim->prompt, "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n\nprint(add(1, 2))<|fim_middle|>");
  std::vector<int32_t> ends;
  for (const char* end : {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}) {
    ends.push_back(*(*qwen)->TokenToId(end));
  }
  EXPECT_EQ(fim->end_token_ids, ends) << "StarCoder's spellings are several tokens here: not ends";
  SamplingParams sampling;
  sampling.stop_token_ids = {ends[3], 7};
  AddFillInMiddleEnds(*fim, &sampling);
  EXPECT_EQ(sampling.stop_token_ids, std::vector<int32_t>({ends[3], 7, ends[0], ends[1], ends[2], ends[4], ends[5]}))
      << "each once, after the request's own";
  SamplingParams to_the_end;
  to_the_end.ignore_eos = true;
  AddFillInMiddleEnds(*fim, &to_the_end);
  EXPECT_TRUE(to_the_end.stop_token_ids.empty()) << "ignore_eos goes on to max_tokens";
  auto ids = (*qwen)->Encode(fim->prompt, /*add_special_tokens=*/false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), (*qwen)->TokenToId("<|fim_prefix|>"));
  EXPECT_EQ(ids->back(), (*qwen)->TokenToId("<|fim_middle|>"));
  EXPECT_EQ(FillInMiddlePrompt(**qwen, "", "x", "suffix")->prompt, "<|fim_prefix|><|fim_suffix|>x<|fim_middle|>") << "an empty prefix";

  auto llama = LoadTokenizer(testing::FixturePath("llama3-tiny"));
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_FALSE(FillInMiddleMarkersOf(**llama).has_value());
  const absl::Status refused = FillInMiddlePrompt(**llama, "a", "b", "suffix").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(refused.message(), "suffix: this model has no fill-in-the-middle tokens")) << refused;

  struct Family {
    std::string prefix, suffix, middle;
  };
  for (const Family& family : {Family{"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
                               Family{"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"}}) {
    testing::ScopedTempDir dir;
    auto tokenizer = LlamaWithMarkers(dir, family.prefix, family.suffix, family.middle);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    auto family_fim = FillInMiddlePrompt(**tokenizer, "P", "S", "suffix");
    ASSERT_TRUE(family_fim.ok()) << family_fim.status();
    EXPECT_EQ(family_fim->prompt, family.prefix + "P" + family.suffix + "S" + family.middle);
    const Tokenizer& vocabulary = **tokenizer;
    EXPECT_EQ(family_fim->end_token_ids,
              std::vector<int32_t>({*vocabulary.TokenToId(family.prefix), *vocabulary.TokenToId(family.suffix),
                                    *vocabulary.TokenToId(family.middle)}));
  }
  testing::ScopedTempDir partial;  // two of a family's three markers are not enough
  auto two = LlamaWithMarkers(partial, "<fim_prefix>", "<fim_suffix>", "<fim_end>");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_FALSE(FillInMiddleMarkersOf(**two).has_value());
}

}  // namespace
}  // namespace arach::server
