// Tokenizers against the Hugging Face `tokenizers` outputs of the fixtures: the 322 GPT-2 / GPT-NeoX cases
// of refs/tokenizer_refs.jsonl, and the 263 texts of tokenizers/refs.jsonl for the real tokenizer.json
// files of Llama 2, Llama 3 and Qwen3 (ids, ids with special tokens, decoded text).
#include <fstream>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/output/detokenizer.h"
#include "engine/sampling/token_filter.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"
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
    auto ids = (*tokenizer)->Encode(c.text, false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    if (*ids != c.*expected_ids && ++mismatches <= 5) ADD_FAILURE() << model << " encodes differently: " << c.text.substr(0, 120);
    auto text = (*tokenizer)->Decode(*ids, false);
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

// One family of tokenizers/refs.jsonl: every text's ids, with_special and decoded must match exactly.
void CheckFamily(const std::string& family) {
  auto tokenizer = LoadTokenizer(testing::FixturePath("tokenizers/" + family));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::ifstream in(testing::FixturePath("tokenizers/refs.jsonl"));
  std::string line;
  int cases = 0, mismatches = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string text = j["text"].get<std::string>();
    const auto& ref = j[family];
    ++cases;
    auto ids = (*tokenizer)->Encode(text, /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status() << " " << text.substr(0, 80);
    auto with_special = (*tokenizer)->Encode(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(with_special.ok()) << with_special.status();
    auto decoded = (*tokenizer)->Decode(ref["ids"].get<std::vector<int32_t>>(), /*skip_special_tokens=*/false);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    const bool ok = *ids == ref["ids"].get<std::vector<int32_t>>() &&
                    *with_special == ref["with_special"].get<std::vector<int32_t>>() &&
                    SanitizeUtf8(*decoded) == ref["decoded"].get<std::string>();
    if (!ok && ++mismatches <= 5) {
      ADD_FAILURE() << family << " differs on " << nlohmann::json(text.substr(0, 120)).dump() << "\n  ids  " << nlohmann::json(*ids).dump()
                    << "\n  want " << ref["ids"].dump() << "\n  special " << nlohmann::json(*with_special).dump() << " want "
                    << ref["with_special"].dump() << "\n  decoded " << nlohmann::json(SanitizeUtf8(*decoded)).dump() << " want "
                    << ref["decoded"].dump();
    }
  }
  EXPECT_EQ(cases, 263);
  EXPECT_EQ(mismatches, 0) << family;
}

TEST(TokenizerRefs, Llama2TokenizerJson) {
  ARACH_REQUIRE_FIXTURES();
  CheckFamily("llama2");
}

TEST(TokenizerRefs, Llama3TokenizerJson) {
  ARACH_REQUIRE_FIXTURES();
  CheckFamily("llama3");
}

TEST(TokenizerRefs, Qwen3TokenizerJson) {
  ARACH_REQUIRE_FIXTURES();
  CheckFamily("qwen3");
}

// Streaming: generated ids decoded one at a time (after a prompt) give the text of decoding them all at
// once, and no delta ever ends inside a UTF-8 character, also when byte-fallback pieces of one emoji arrive
// one by one (Llama 2) or a SentencePiece "▁" starts the first generated token.
TEST(TokenizerRefs, StreamingDecodeEqualsWholeDecodeAndNeverSplitsACharacter) {
  ARACH_REQUIRE_FIXTURES();
  for (const std::string family : {"llama2", "llama3", "qwen3"}) {
    auto tokenizer = LoadTokenizer(testing::FixturePath("tokenizers/" + family));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    std::ifstream in(testing::FixturePath("tokenizers/refs.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      const std::string text = nlohmann::json::parse(line)["text"].get<std::string>();
      auto ids = (*tokenizer)->Encode(absl::StrCat("Prompt: ", text), false);
      ASSERT_TRUE(ids.ok());
      const size_t prompt_len = std::min<size_t>(2, ids->size());
      const std::span<const int32_t> all(*ids);
      IncrementalDetokenizer detokenizer(**tokenizer, {}, all.subspan(0, prompt_len));
      std::string streamed;
      for (int32_t id : all.subspan(prompt_len)) {
        auto delta = detokenizer.Add(id);
        ASSERT_TRUE(delta.ok()) << delta.status();
        EXPECT_TRUE(DecodeUtf8(*delta).ok()) << family << ": a delta splits a character in " << text;
        streamed += *delta;
      }
      streamed += detokenizer.Flush();
      const std::string whole = *(*tokenizer)->Decode(all, false);
      const std::string prompt = *(*tokenizer)->Decode(all.subspan(0, prompt_len), false);
      ASSERT_TRUE(absl::StartsWith(whole, prompt));
      EXPECT_EQ(streamed, SanitizeUtf8(whole.substr(prompt.size()))) << family << ": " << text;
    }
  }
}

TEST(TokenizerRefs, Llama2cDecodesTheReferenceStory) {
  ARACH_REQUIRE_FIXTURES();
  auto tokenizer = LoadTokenizer(testing::FixturePath("llama-stories260k"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto& notes = testing::RefsJson()["notes"];
  const auto ids = notes["llama_greedy_from_bos_60"].get<std::vector<int32_t>>();
  auto text = (*tokenizer)->Decode(std::span<const int32_t>(ids).subspan(1), false);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, notes["llama_greedy_text"].get<std::string>());
  // Encoding the story gives back the ids of the pieces the model produced.
  auto encoded = EncodePrompt(**tokenizer, "Once upon a time, there was a little girl named Lily.");
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_EQ(std::vector<int32_t>(encoded->begin(), encoded->end()),
            std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(encoded->size())));
}

// IdToToken is the vocabulary's own string of every id (Hugging Face's convert_ids_to_tokens), read here straight
// from each fixture's files: tokenizer.json's model.vocab and added_tokens, GPT-2's vocab.json, llama2.c's
// pieces.json.
TEST(TokenizerRefs, IdToTokenIsTheVocabularysOwnString) {
  ARACH_REQUIRE_FIXTURES();
  const auto read_json = [](const std::string& path) {
    std::ifstream in(testing::FixturePath(path));
    return nlohmann::json::parse(in);
  };
  // `expected`: id -> token string.
  const auto check = [](const std::string& dir, const std::map<int32_t, std::string>& expected) {
    auto tokenizer = LoadTokenizer(testing::FixturePath(dir));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    ASSERT_FALSE(expected.empty()) << dir;
    int mismatches = 0;
    for (const auto& [id, token] : expected) {
      const std::optional<std::string> got = (*tokenizer)->IdToToken(id);
      if (got != token && ++mismatches <= 5) ADD_FAILURE() << dir << " id " << id << ": '" << got.value_or("(none)") << "', not '" << token << "'";
    }
    EXPECT_EQ(mismatches, 0) << dir << " of " << expected.size();
    EXPECT_EQ((*tokenizer)->IdToToken(-1), std::nullopt);
    EXPECT_EQ((*tokenizer)->IdToToken(expected.rbegin()->first + 1000), std::nullopt);
  };
  for (const std::string dir : {"tokenizers/llama2", "tokenizers/llama3", "tokenizers/qwen3", "neox-tiny"}) {
    const nlohmann::json file = read_json(dir + "/tokenizer.json");
    std::map<int32_t, std::string> expected;
    for (const auto& [token, id] : file["model"]["vocab"].items()) expected[id.get<int32_t>()] = token;
    for (const auto& added : file["added_tokens"]) expected[added["id"].get<int32_t>()] = added["content"].get<std::string>();
    check(dir, expected);
  }
  std::map<int32_t, std::string> gpt2;
  const nlohmann::json vocab = read_json("gpt2-tiny/vocab.json");
  for (const auto& [token, id] : vocab.items()) gpt2[id.get<int32_t>()] = token;
  check("gpt2-tiny", gpt2);
  std::map<int32_t, std::string> llama2c;
  const nlohmann::json pieces = read_json("llama-stories260k/pieces.json");
  for (size_t id = 0; id < pieces.size(); ++id) llama2c[static_cast<int32_t>(id)] = pieces[id].get<std::string>();
  check("llama-stories260k", llama2c);
}

// vLLM's bad-word rule on the real tokenizers: a word bans its own tokens (leading white space dropped) and, where
// one space before it makes a different first token in as many tokens, those too (byte-level BPE: "Ġhello"); a
// SentencePiece tokenizer that already writes "▁hello" for the bare word adds nothing.
TEST(TokenizerRefs, BadWordsBanTheWordAndItsSpacedForm) {
  ARACH_REQUIRE_FIXTURES();
  auto ids_of = [](const Tokenizer& tokenizer, std::initializer_list<const char*> tokens) {
    std::vector<int32_t> ids;
    for (const char* token : tokens) {
      const std::optional<int32_t> id = tokenizer.TokenToId(token);
      EXPECT_TRUE(id.has_value()) << token;
      ids.push_back(id.value_or(-1));
    }
    return ids;
  };
  using Sequences = std::vector<std::vector<int32_t>>;
  for (const std::string dir : {"tokenizers/llama3", "tokenizers/qwen3", "gpt2-tiny"}) {
    SCOPED_TRACE(dir);
    auto tokenizer = LoadTokenizer(testing::FixturePath(dir));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    const Tokenizer& t = **tokenizer;
    const std::vector<std::string> words = {"hello", "  hello"};
    absl::StatusOr<Sequences> ids = BadWordTokenIds(words, t, t.vocab_size());
    ASSERT_TRUE(ids.ok()) << ids.status();
    const Sequences both = {ids_of(t, {"hello"}), ids_of(t, {"\u0120hello"})};
    EXPECT_EQ(*ids, (Sequences{both[0], both[1], both[0], both[1]})) << "leading white space is dropped first";
  }
  auto llama2 = LoadTokenizer(testing::FixturePath("tokenizers/llama2"));
  ASSERT_TRUE(llama2.ok()) << llama2.status();
  const std::vector<std::string> words = {"Hello"};
  absl::StatusOr<Sequences> ids = BadWordTokenIds(words, **llama2, (*llama2)->vocab_size());
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (Sequences{ids_of(**llama2, {"\u2581Hello"})}));

  const std::vector<std::string> blank = {"ok", " \t "};
  EXPECT_EQ(BadWordTokenIds(blank, **llama2, (*llama2)->vocab_size()).status().message(),
            "bad_words[1]: has no character other than white space");
}

}  // namespace
}  // namespace arach
