// Tokenizer pieces without fixtures: the GPT-2 pre-tokenizer, BPE merging, added tokens, UTF-8 helpers,
// the synthetic vocabulary of make-model, and llama2.c encoding.
#include <fstream>
#include <numeric>

#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/pre_tokenizers.h"
#include "engine/tokenizer/regex.h"
#include "tools/make_model/synthetic_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

// GPT-2's pre-tokenization regex as the ByteLevel pre-tokenizer runs it (PCRE2), pieces before the
// byte-level mapping.
std::vector<std::string> Split(const std::string& text) {
  auto regex = Regex::Compile(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  EXPECT_TRUE(regex.ok()) << regex.status();
  std::vector<std::string> out;
  for (const auto& [begin, end] : SplitRanges(text.size(), (*regex)->FindAll(text), SplitBehavior::kIsolated, false)) {
    out.push_back(text.substr(begin, end - begin));
  }
  return out;
}

TEST(Gpt2PreTokenizer, FollowsTheRegexAlternatives) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(Split("Hello  world"), (V{"Hello", " ", " world"}));
  EXPECT_EQ(Split("I'm you're we'll"), (V{"I", "'m", " you", "'re", " we", "'ll"}));
  EXPECT_EQ(Split("don't!!!???"), (V{"don", "'t", "!!!???"}));
  EXPECT_EQ(Split("  \nHi"), (V{"  ", "\n", "Hi"}));
  EXPECT_EQ(Split("a  "), (V{"a", "  "}));
  EXPECT_EQ(Split("x 123 3.14"), (V{"x", " 123", " 3", ".", "14"}));
  EXPECT_EQ(Split(" 's"), (V{" '", "s"}));
  EXPECT_EQ(Split("\xc2\xa0nbsp"), (V{"\xc2\xa0", "nbsp"}));  // U+00A0 is whitespace
  EXPECT_EQ(Split("Привет мир"), (V{"Привет", " мир"}));
  EXPECT_EQ(Split(""), V{});
}

TEST(Utf8, CompletePrefixHoldsBackAPartialCharacter) {
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xe2\x82"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xe2\x82\xac"), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("\xf0\x9f\xa4"), 0u);
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
}

// Tokenizers' Lowercase maps each character alone; Python's str.lower (Sentence-Transformers' do_lower_case, Jinja's
// lower) reads the context: a capital sigma ending a word is ς. Both map İ to i + combining dot above.
TEST(Lowercasing, CharacterByCharacterAndAsPythonDoes) {
  EXPECT_EQ(ToLower("ΟΔΟΣ ΑΒC"), "οδοσ αβc");
  EXPECT_EQ(PythonLower("ΟΔΟΣ ΑΒC"), "οδος αβc");
  EXPECT_EQ(PythonLower("İSTANBUL"), "i\u0307stanbul");
  EXPECT_EQ(ToLower("İ"), "i\u0307");
  EXPECT_EQ(PythonLower("\xff\xfeA"), "\xff\xfeA") << "not UTF-8: unchanged";
}

TEST(Bpe, MergesLowestRankFirstLeftmostOnTies) {
  BpeVocabulary vocab = {{"a", 0}, {"b", 1}, {"ab", 2}, {"aa", 3}, {"aab", 4}};
  auto model = BpeModel::Create(vocab, {{"a", "a"}, {"a", "b"}, {"aa", "b"}}, BpeOptions{}, "test");
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<int32_t> ids;
  ASSERT_TRUE(model->Encode("aaab", ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 2}));  // (a a) first at the left, then (a b): "aa" "ab"
  ids.clear();
  ASSERT_TRUE(model->Encode("aab", ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{4}));
  auto bad = BpeModel::Create(vocab, {{"b", "b"}}, BpeOptions{}, "merges.txt");
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("merge 0 (\"b\" \"b\")"));
}

// Two tokens with one id (a vocabulary some conversions leave behind): the id names the lesser string, in every
// process, whatever order the hash map iterates in (20 such pairs: a map's order would get them all right once in
// a million); both strings still encode to it.
TEST(Bpe, AnIdTwoTokensShareNamesTheLesserString) {
  BpeVocabulary vocab;
  for (int i = 0; i < 20; ++i) {
    vocab.emplace("z" + std::to_string(i), i);
    vocab.emplace("a" + std::to_string(i), i);
  }
  auto model = BpeModel::Create(vocab, {}, BpeOptions{}, "test");
  ASSERT_TRUE(model.ok()) << model.status();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(model->TokenString(i), "a" + std::to_string(i));
    EXPECT_EQ(model->TokenId("z" + std::to_string(i)), i);
    EXPECT_EQ(model->TokenId("a" + std::to_string(i)), i);
  }
}

TEST(AddedTokens, LeftmostLongestMatch) {
  AddedTokenMatcher matcher({{"<|a|>", 10, true, false}, {"<|a|><|b|>", 11, true, false}, {"  ", 12, false, true}},
                            {"<|a|>", "<|a|><|b|>", "  "});
  const auto segments = matcher.Split("x<|a|><|b|>y<|a|>  z");
  ASSERT_EQ(segments.size(), 6u);
  EXPECT_EQ(segments[0].text, "x");
  EXPECT_EQ(segments[1].id, 11);
  EXPECT_EQ(segments[2].text, "y");
  EXPECT_EQ(segments[3].id, 10);
  EXPECT_EQ(segments[4].id, 12);
  EXPECT_EQ(segments[5].text, "z");
}

TEST(SyntheticTokenizer, IsAValidVocabularyOfTheRequestedSize) {
  testing::ScopedTempDir dir;
  ASSERT_TRUE(WriteSyntheticTokenizer(dir.path(), 3000, 1).ok());
  auto tokenizer = LoadTokenizer(dir.path());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->vocab_size(), 3000);
  EXPECT_EQ((*tokenizer)->TokenToId("<|endoftext|>"), 2999);
  for (const std::string text : {"hello there, general kenobi!", "ünïcödé ✓ 日本", "<|endoftext|>tail"}) {
    auto ids = (*tokenizer)->Encode(text, false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*(*tokenizer)->Decode(*ids, false), text);
  }
  // Every id decodes to something.
  std::vector<int32_t> all(3000);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_TRUE((*tokenizer)->Decode(all, false).ok());
  EXPECT_EQ(*(*tokenizer)->Decode(std::vector<int32_t>{3000}, false), "") << "unknown ids decode to nothing, as tokenizers does";
}

TEST(Llama2cTokenizer, EncodesWithDummyPrefixByteFallbackAndScores) {
  testing::ScopedTempDir dir;
  // A five-piece vocabulary plus the 256 byte pieces.
  std::vector<std::pair<std::string, float>> pieces = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    pieces.push_back({name, 0});
  }
  for (const auto& [piece, score] : std::vector<std::pair<std::string, float>>{
           {" ", -1}, {"h", -2}, {"i", -3}, {"hi", -4}, {" hi", -5}}) {
    pieces.push_back({piece, score});
  }
  {
    std::ofstream out(dir.File("tokenizer.bin"), std::ios::binary);
    const int32_t max_len = 6;
    out.write(reinterpret_cast<const char*>(&max_len), 4);
    for (const auto& [piece, score] : pieces) {
      const int32_t len = static_cast<int32_t>(piece.size());
      out.write(reinterpret_cast<const char*>(&score), 4);
      out.write(reinterpret_cast<const char*>(&len), 4);
      out.write(piece.data(), len);
    }
  }
  auto tokenizer = LoadTokenizer(dir.path());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const int space = 259, hi_with_space = 263;
  auto ids = EncodePrompt(**tokenizer, "hi\xc3\xa9");
  ASSERT_TRUE(ids.ok());
  // BOS, " hi" (merged from " " + "hi"), then é by byte fallback (0xC3, 0xA9 -> ids 3 + byte).
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, hi_with_space, 3 + 0xc3, 3 + 0xa9}));
  EXPECT_EQ(*(*tokenizer)->Decode(*ids, false), "hi\xc3\xa9");  // the space after BOS is dropped
  EXPECT_EQ(*(*tokenizer)->Decode(std::vector<int32_t>{space, 3 + 'A'}, false), " A");
}

}  // namespace
}  // namespace arach
