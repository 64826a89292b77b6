// The tokenizer.json pipeline component by component, on small hand-written files: every normalizer,
// pre-tokenizer behavior, BPE option, added-token option, post-processor and decoder the loader accepts,
// with the results Hugging Face tokenizers documents; and the load-time errors for what it does not accept.
#include <fstream>

#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/normalizers.h"
#include "engine/tokenizer/pre_tokenizers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

std::vector<std::string> PreTokenize(const json& spec, const std::string& text) {
  auto pre = ParsePreTokenizer(spec, "test");
  EXPECT_TRUE(pre.ok()) << pre.status();
  std::vector<TextPiece> pieces = {{text, true}};
  EXPECT_TRUE((*pre)->PreTokenize(pieces).ok());
  std::vector<std::string> out;
  for (const TextPiece& p : pieces) out.push_back(p.text);
  return out;
}

json SplitOn(const std::string& delimiter, const std::string& behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", delimiter}}}, {"behavior", behavior}, {"invert", invert}};
}

TEST(PreTokenizers, SplitBehaviorsAsTokenizersDocumentsThem) {
  using V = std::vector<std::string>;
  // tokenizers' own example: splitting "the-final--countdown" on '-' (empty pieces are dropped).
  EXPECT_EQ(PreTokenize(SplitOn("-", "Removed"), "the-final--countdown"), (V{"the", "final", "countdown"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "Isolated"), "the-final--countdown"), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "MergedWithPrevious"), "the-final--countdown"), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "MergedWithNext"), "the-final--countdown"), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "Contiguous"), "the-final--countdown"), (V{"the", "-", "final", "--", "countdown"}));
  // invert: the pattern matches what is kept.
  EXPECT_EQ(PreTokenize(SplitOn("-", "Removed", /*invert=*/true), "a-b"), (V{"-"}));
  json regex = {{"type", "Split"}, {"pattern", {{"Regex", R"(\p{N}+)"}}}, {"behavior", "Isolated"}, {"invert", false}};
  EXPECT_EQ(PreTokenize(regex, "ab12cd٣٤"), (V{"ab", "12", "cd", "٣٤"}));
}

TEST(PreTokenizers, MetaspaceSchemes) {
  using V = std::vector<std::string>;
  const std::string m = "\xe2\x96\x81";
  json always = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(PreTokenize(always, "Hey friend!"), (V{m + "Hey", m + "friend!"}));
  EXPECT_EQ(PreTokenize(always, "Hey   friend!"), (V{m + "Hey", m, m, m + "friend!"}));
  json no_split = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "first"}, {"split", false}};
  EXPECT_EQ(PreTokenize(no_split, "a b"), (V{m + "a" + m + "b"}));
  json never = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "never"}, {"split", true}};
  EXPECT_EQ(PreTokenize(never, "a b"), (V{"a", m + "b"}));
  // "first": only a piece at the start of the input gets the prefix.
  auto pre = ParsePreTokenizer(no_split, "test");
  ASSERT_TRUE(pre.ok());
  std::vector<TextPiece> pieces = {{"a", true}, {"b", false}};
  ASSERT_TRUE((*pre)->PreTokenize(pieces).ok());
  EXPECT_EQ(pieces[0].text, m + "a");
  EXPECT_EQ(pieces[1].text, "b");
}

TEST(PreTokenizers, DigitsPunctuationWhitespaceAndSequence) {
  using V = std::vector<std::string>;
  EXPECT_EQ(PreTokenize({{"type", "Digits"}, {"individual_digits", true}}, "a123b"), (V{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(PreTokenize({{"type", "Digits"}, {"individual_digits", false}}, "a123b"), (V{"a", "123", "b"}));
  EXPECT_EQ(PreTokenize({{"type", "Punctuation"}, {"behavior", "Isolated"}}, "Hey, you!?"), (V{"Hey", ",", " you", "!", "?"}));
  EXPECT_EQ(PreTokenize({{"type", "Punctuation"}, {"behavior", "Contiguous"}}, "Hey, you!?"), (V{"Hey", ",", " you", "!?"}));
  EXPECT_EQ(PreTokenize({{"type", "Whitespace"}}, "Hey man!! How's it"), (V{"Hey", "man", "!!", "How", "'", "s", "it"}));
  EXPECT_EQ(PreTokenize({{"type", "WhitespaceSplit"}}, " Hey  man!\tok "), (V{"Hey", "man!", "ok"}));
  json sequence = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", true}}}}};
  EXPECT_EQ(PreTokenize(sequence, "ab12 c3"), (V{"ab", "1", "2", "c", "3"}));
  // ByteLevel maps bytes to the byte-level alphabet (space -> "Ġ") after an optional prefix space.
  EXPECT_EQ(PreTokenize({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}, "Hi you"),
            (V{"\xc4\xa0Hi", "\xc4\xa0you"}));
  EXPECT_EQ(PreTokenize({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}, "Hi you"), (V{"Hi\xc4\xa0you"}));
}

std::string Normalized(const json& spec, const std::string& text) {
  auto normalizer = ParseNormalizer(spec, "test");
  EXPECT_TRUE(normalizer.ok()) << normalizer.status();
  auto out = (*normalizer)->Normalize(text);
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

TEST(Normalizers, EachType) {
  EXPECT_EQ(Normalized({{"type", "NFKC"}}, "\xef\xac\x81 \xe2\x91\xa0"), "fi 1");  // ﬁ ①
  EXPECT_EQ(Normalized({{"type", "NFD"}}, "\xc3\xa9"), "e\xcc\x81");
  EXPECT_EQ(Normalized({{"type", "NFC"}}, "e\xcc\x81"), "\xc3\xa9");
  EXPECT_EQ(Normalized({{"type", "Lowercase"}}, "HeLLo \xc3\x84\xce\xa3"), "hello \xc3\xa4\xcf\x83");
  EXPECT_EQ(Normalized({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, " \t x \n"), "x \n");
  EXPECT_EQ(Normalized({{"type", "Prepend"}, {"prepend", "_"}}, "x"), "_x");
  EXPECT_EQ(Normalized({{"type", "Prepend"}, {"prepend", "_"}}, ""), "") << "an empty piece stays empty";
  EXPECT_EQ(Normalized({{"type", "Replace"}, {"pattern", {{"String", "a.b"}}}, {"content", "X"}}, "a.b axb"), "X axb");
  EXPECT_EQ(Normalized({{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}, "a  b    c"), "a b c");
  EXPECT_EQ(Normalized({{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}}},
                       "Éléphant"),
            "elephant");
}

// A tokenizer.json with the given parts around a tiny BPE vocabulary.
class TinyTokenizer : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<HfTokenizer>> Load(json model, json added = json::array(), json normalizer = nullptr,
                                                    json pre_tokenizer = nullptr, json post_processor = nullptr,
                                                    json decoder = nullptr) {
    json file = {{"version", "1.0"},         {"truncation", nullptr},           {"padding", nullptr},
                 {"added_tokens", added},    {"normalizer", normalizer},        {"pre_tokenizer", pre_tokenizer},
                 {"post_processor", post_processor}, {"decoder", decoder}, {"model", model}};
    std::ofstream(dir_.File("tokenizer.json")) << file.dump();
    return HfTokenizer::FromTokenizerJson(dir_.File("tokenizer.json"));
  }
  static json Bpe(json vocab, json merges, json extra = json::object()) {
    json model = {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", vocab}, {"merges", merges}};
    for (const auto& [key, value] : extra.items()) model[key] = value;
    return model;
  }
  std::vector<int32_t> Ids(const Tokenizer& t, const std::string& text, bool special = false) {
    auto ids = t.Encode(text, special);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? *ids : std::vector<int32_t>{};
  }
  testing::ScopedTempDir dir_;
};

TEST_F(TinyTokenizer, UnknownCharactersByteFallbackAndFusedUnk) {
  const json vocab = {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"ab", 3}, {"<0xC3>", 4}, {"<0xA9>", 5}};
  auto fused = Load(Bpe(vocab, {"a b"}, {{"unk_token", "<unk>"}, {"fuse_unk", true}}));
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(Ids(**fused, "abxxa"), (std::vector<int32_t>{3, 0, 1}));
  auto unfused = Load(Bpe(vocab, {"a b"}, {{"unk_token", "<unk>"}, {"fuse_unk", false}}));
  ASSERT_TRUE(unfused.ok());
  EXPECT_EQ(Ids(**unfused, "abxxa"), (std::vector<int32_t>{3, 0, 0, 1}));
  auto bytes = Load(Bpe(vocab, {"a b"}, {{"unk_token", "<unk>"}, {"byte_fallback", true}}));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(Ids(**bytes, "a\xc3\xa9x"), (std::vector<int32_t>{1, 4, 5, 0})) << "é has byte pieces, x does not";
  auto no_unk = Load(Bpe(vocab, {"a b"}));
  ASSERT_TRUE(no_unk.ok());
  EXPECT_EQ(Ids(**no_unk, "axb"), (std::vector<int32_t>{3})) << "without an unknown token tokenizers drops the character "
                                                                "(and its neighbours then merge)";
}

TEST_F(TinyTokenizer, SubwordPrefixSuffixAndIgnoreMerges) {
  auto prefixed = Load(Bpe({{"a", 0}, {"##b", 1}, {"##c", 2}, {"ab", 3}, {"abc", 4}}, {"a ##b", "ab ##c"},
                           {{"continuing_subword_prefix", "##"}}));
  ASSERT_TRUE(prefixed.ok()) << prefixed.status();
  EXPECT_EQ(Ids(**prefixed, "abc"), (std::vector<int32_t>{4}));
  EXPECT_EQ(Ids(**prefixed, "ab"), (std::vector<int32_t>{3}));
  auto suffixed = Load(Bpe({{"a", 0}, {"b</w>", 1}, {"ab</w>", 2}}, {"a b</w>"}, {{"end_of_word_suffix", "</w>"}}));
  ASSERT_TRUE(suffixed.ok()) << suffixed.status();
  EXPECT_EQ(Ids(**suffixed, "ab"), (std::vector<int32_t>{2}));
  // ignore_merges: a piece that is a token is taken whole even when the merges would not build it.
  const json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"bc", 3}, {"abc", 4}};
  auto with = Load(Bpe(vocab, {"b c"}, {{"ignore_merges", true}}));
  auto without = Load(Bpe(vocab, {"b c"}, {{"ignore_merges", false}}));
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(Ids(**with, "abc"), (std::vector<int32_t>{4}));
  EXPECT_EQ(Ids(**without, "abc"), (std::vector<int32_t>{0, 3}));
}

TEST_F(TinyTokenizer, AddedTokenOptions) {
  const json vocab = {{"a", 0}, {"b", 1}, {" ", 2}, {"x", 3}};
  const json added = {
      {{"id", 10}, {"content", "<m>"}, {"single_word", true}, {"lstrip", true}, {"rstrip", true}, {"normalized", false}, {"special", true}},
      {{"id", 11}, {"content", "B"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", true}, {"special", false}},
  };
  auto t = Load(Bpe(vocab, json::array()), added, {{"type", "Lowercase"}});
  ASSERT_TRUE(t.ok()) << t.status();
  // lstrip/rstrip take the spaces around "<m>"; "B" is normalized (lowercased) like the text, so it
  // matches every "b" of the normalized pieces.
  EXPECT_EQ(Ids(**t, "a <m> b"), (std::vector<int32_t>{0, 10, 11}));
  EXPECT_EQ(Ids(**t, "aB"), (std::vector<int32_t>{0, 11}));
  // single_word: inside a word "<m>" is plain text (its characters are not in the vocabulary: dropped).
  EXPECT_EQ(Ids(**t, "x<m>a"), (std::vector<int32_t>{3, 0}));
  EXPECT_EQ(Ids(**t, "x <m>"), (std::vector<int32_t>{3, 10}));
}

TEST_F(TinyTokenizer, TemplatePostProcessorAndDecoders) {
  const std::string m = "\xe2\x96\x81";
  const json vocab = {{"<s>", 0}, {"</s>", 1}, {m + "a", 2}, {m, 3}, {"b", 4}, {"<0xE2>", 5}, {"<0x82>", 6}, {"<0xAC>", 7}, {"a", 8}};
  const json added = {{{"id", 0}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
                      {{"id", 1}, {"content", "</s>"}, {"special", true}, {"normalized", false}}};
  const json post = {{"type", "TemplateProcessing"},
                     {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                 {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
                     {"pair", json::array()},
                     {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}},
                                         {"</s>", {{"id", "</s>"}, {"ids", {1}}, {"tokens", {"</s>"}}}}}}};
  const json decoder = {{"type", "Sequence"},
                        {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", m}}}, {"content", " "}},
                                      {{"type", "ByteFallback"}},
                                      {{"type", "Fuse"}},
                                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  const json normalizer = {{"type", "Sequence"},
                           {"normalizers", {{{"type", "Prepend"}, {"prepend", m}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", m}}}}};
  auto t = Load(Bpe(vocab, {m + " a"}, {{"byte_fallback", true}}), added, normalizer, nullptr, post, decoder);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Ids(**t, "a b", /*special=*/true), (std::vector<int32_t>{0, 2, 3, 4, 1}));
  EXPECT_EQ(*(*t)->Decode(std::vector<int32_t>{2, 3, 4}, false), "a b") << "the leading space is stripped";
  EXPECT_EQ(*(*t)->Decode(std::vector<int32_t>{0, 2, 1}, false), "<s> a</s>");
  EXPECT_EQ(*(*t)->Decode(std::vector<int32_t>{0, 2, 1}, /*skip_special_tokens=*/true), "a");
  EXPECT_EQ(*(*t)->Decode(std::vector<int32_t>{5, 6, 7}, false), "\xe2\x82\xac") << "byte pieces join into €";
  EXPECT_EQ(*(*t)->Decode(std::vector<int32_t>{5, 6}, false), "\xe2\x82") << "raw bytes: the caller holds a partial character";
  EXPECT_TRUE((*t)->IsSpecial(0));
  EXPECT_FALSE((*t)->IsSpecial(2));
}

TEST_F(TinyTokenizer, PostProcessorIdsOutsideTheVocabularyAreRefusedAtLoad) {
  const json model = Bpe({{"<s>", 0}, {"a", 1}}, json::array());
  const json post = {{"type", "TemplateProcessing"},
                     {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                     {"pair", json::array()},
                     {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {8}}, {"tokens", {"<s>"}}}}}}};
  EXPECT_THAT(std::string(Load(model, json::array(), nullptr, nullptr, post).status().message()),
              HasSubstr("post_processor adds token id 8, outside the vocabulary (ids 0..1)"));
  const json roberta = {{"type", "RobertaProcessing"}, {"cls", {"<s>", 0}}, {"sep", {"</s>", -1}}};
  EXPECT_THAT(std::string(Load(model, json::array(), nullptr, nullptr, roberta).status().message()),
              HasSubstr("post_processor adds token id -1"));
}

TEST_F(TinyTokenizer, UnsupportedComponentsAndOptionsAreNamedAtLoad) {
  const json model = Bpe({{"a", 0}}, json::array());
  EXPECT_THAT(std::string(Load(model, json::array(), {{"type", "Precompiled"}, {"precompiled_charsmap", "x"}}).status().message()),
              HasSubstr("normalizer: normalizer type \"Precompiled\" is not supported"));
  EXPECT_THAT(std::string(Load(model, json::array(), nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"frobnicate", 1}})
                              .status()
                              .message()),
              HasSubstr("pre_tokenizer: option \"frobnicate\" is not supported"));
  EXPECT_THAT(std::string(Load(model, json::array(), nullptr, {{"type", "UnicodeScripts"}}).status().message()),
              HasSubstr("pre-tokenizer type \"UnicodeScripts\""));
  EXPECT_THAT(std::string(Load(model, json::array(), nullptr, nullptr, nullptr, {{"type", "WordPiece"}}).status().message()),
              HasSubstr("decoder type \"WordPiece\""));
  json dropout = model;
  dropout["dropout"] = 0.1;
  EXPECT_THAT(std::string(Load(dropout).status().message()), HasSubstr("\"dropout\" is not supported"));
  json unigram = {{"type", "Unigram"}, {"vocab", json::array()}};
  EXPECT_THAT(std::string(Load(unigram).status().message()), HasSubstr("model type \"Unigram\" is not supported"));
  json split = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}, {"invert", false}};
  EXPECT_THAT(std::string(Load(model, json::array(), nullptr, split).status().message()), HasSubstr("does not compile"));
  json bad_behavior = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Sideways"}, {"invert", false}};
  EXPECT_THAT(std::string(Load(model, json::array(), nullptr, bad_behavior).status().message()), HasSubstr("behavior \"Sideways\""));
}

}  // namespace
}  // namespace arach
