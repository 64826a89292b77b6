#include "engine/tokenizer/pre_tokenizers.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_component.h"
#include "engine/tokenizer/regex.h"
#include "engine/tokenizer/unicode.h"

namespace arach {
namespace {

// GPT-2's pre-tokenization pattern (ByteLevel with use_regex).
constexpr char kGpt2Pattern[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Replaces each piece by the pieces `split` makes of its text; a sub-piece is at the start of the input
// when its piece is and it begins at byte 0 of it.
using Ranges = std::vector<std::pair<size_t, size_t>>;

template <typename SplitFn>
void SplitEach(std::vector<TextPiece>& pieces, const SplitFn& split) {
  std::vector<TextPiece> out;
  out.reserve(pieces.size());
  for (TextPiece& piece : pieces) {
    const Ranges ranges = split(piece.text);
    for (const auto& [begin, end] : ranges) {
      if (end > begin) out.push_back({piece.text.substr(begin, end - begin), piece.at_start && begin == 0});
    }
  }
  pieces = std::move(out);
}

// Splits every piece at the matches of `regex`.
absl::Status SplitByRegex(std::vector<TextPiece>& pieces, const Regex& regex, SplitBehavior behavior, bool invert) {
  SplitEach(pieces, [&](const std::string& text) { return SplitRanges(text.size(), regex.FindAll(text), behavior, invert); });
  return absl::OkStatus();
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::shared_ptr<const Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  absl::Status PreTokenize(std::vector<TextPiece>& pieces) const override {
    for (TextPiece& piece : pieces) {
      if (add_prefix_space_ && !absl::StartsWith(piece.text, " ")) piece.text = absl::StrCat(" ", piece.text);
    }
    if (regex_ != nullptr) ARACH_RETURN_IF_ERROR(SplitByRegex(pieces, *regex_, SplitBehavior::kIsolated, false));
    for (TextPiece& piece : pieces) piece.text = alphabet_.Encode(piece.text);
    return absl::OkStatus();
  }

 private:
  bool add_prefix_space_;
  std::shared_ptr<const Regex> regex_;  // null: no split
  ByteLevelAlphabet alphabet_;
};

class Split final : public PreTokenizer {
 public:
  Split(std::shared_ptr<const Regex> regex, SplitBehavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  absl::Status PreTokenize(std::vector<TextPiece>& pieces) const override {
    return SplitByRegex(pieces, *regex_, behavior_, invert_);
  }

 private:
  std::shared_ptr<const Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

// Spaces become `replacement` ("▁"), a replacement is prepended per `scheme`, and (with split) each
// replacement starts a new piece.
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split, std::shared_ptr<const Regex> replacement_regex)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split), replacement_regex_(std::move(replacement_regex)) {}
  absl::Status PreTokenize(std::vector<TextPiece>& pieces) const override {
    for (TextPiece& piece : pieces) {
      std::string replaced;
      for (char c : piece.text) {
        if (c == ' ') {
          replaced += replacement_;
        } else {
          replaced.push_back(c);
        }
      }
      const bool prepend = scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && piece.at_start);
      if (prepend && !absl::StartsWith(replaced, replacement_)) replaced = absl::StrCat(replacement_, replaced);
      piece.text = std::move(replaced);
    }
    if (!split_) return absl::OkStatus();
    return SplitByRegex(pieces, *replacement_regex_, SplitBehavior::kMergedWithNext, false);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  std::shared_ptr<const Regex> replacement_regex_;
};

// A pre-tokenizer that is one regex split (Digits, Punctuation, Whitespace, WhitespaceSplit).
absl::StatusOr<std::unique_ptr<PreTokenizer>> RegexSplit(absl::string_view pattern, SplitBehavior behavior, bool invert) {
  ARACH_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> regex, Regex::Compile(pattern));
  return std::unique_ptr<PreTokenizer>(new Split(std::move(regex), behavior, invert));
}

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  absl::Status PreTokenize(std::vector<TextPiece>& pieces) const override {
    for (const auto& step : steps_) ARACH_RETURN_IF_ERROR(step->PreTokenize(pieces));
    return absl::OkStatus();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

absl::StatusOr<SplitBehavior> ReadBehavior(JsonComponent& c, const std::string& fallback) {
  ARACH_ASSIGN_OR_RETURN(const std::string name, c.String("behavior", fallback));
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return c.Error(absl::StrCat("behavior \"", name, "\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous"));
}

absl::StatusOr<PrependScheme> ReadPrependScheme(JsonComponent& c) {
  if (const nlohmann::json* scheme = c.Get("prepend_scheme"); scheme != nullptr) {
    c.Ignore("add_prefix_space");  // older files carry both; the scheme wins
    if (!scheme->is_string()) return c.Error("\"prepend_scheme\" must be a string");
    const std::string name = scheme->get<std::string>();
    if (name == "always") return PrependScheme::kAlways;
    if (name == "first") return PrependScheme::kFirst;
    if (name == "never") return PrependScheme::kNever;
    return c.Error(absl::StrCat("prepend_scheme \"", name, "\" is not one of always, first, never"));
  }
  ARACH_ASSIGN_OR_RETURN(const bool add_prefix_space, c.Bool("add_prefix_space", true));
  return add_prefix_space ? PrependScheme::kAlways : PrependScheme::kNever;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> SplitRanges(size_t length, const std::vector<std::pair<size_t, size_t>>& matches,
                                                   SplitBehavior behavior, bool invert) {
  // The whole text as alternating (range, is_match) parts.
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> parts;
  size_t at = 0;
  for (const auto& [begin, end] : matches) {
    if (begin > at) parts.push_back({{at, begin}, invert});
    parts.push_back({{begin, end}, !invert});
    at = end;
  }
  if (at < length) parts.push_back({{at, length}, invert});

  std::vector<std::pair<std::pair<size_t, size_t>, bool>> kept;  // (range, remove)
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const auto& [range, is_match] : parts) kept.push_back({range, false});
      break;
    case SplitBehavior::kRemoved:
      kept = parts;  // remove = is_match
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const auto& [range, is_match] : parts) {
        if (is_match && previous_match && !kept.empty()) {
          kept.back().first.second = range.second;
        } else {
          kept.push_back({range, false});
        }
        previous_match = is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& [range, is_match] : parts) {
        if (is_match && !previous_match && !kept.empty()) {
          kept.back().first.second = range.second;
        } else {
          kept.push_back({range, false});
        }
        previous_match = is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool next_match = false;  // walking backwards: whether the part after this one was a match
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        const auto& [range, is_match] = *it;
        if (is_match && !next_match && !kept.empty()) {
          kept.back().first.first = range.first;
        } else {
          kept.push_back({range, false});
        }
        next_match = is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
  }
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& [range, remove] : kept) {
    if (!remove && range.second > range.first) out.push_back(range);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> Gpt2ByteLevelPreTokenizer() {
  ARACH_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> regex, Regex::Compile(kGpt2Pattern));
  return std::unique_ptr<PreTokenizer>(new ByteLevelPreTokenizer(/*add_prefix_space=*/false, std::move(regex)));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const nlohmann::json& spec, const std::string& where) {
  ARACH_ASSIGN_OR_RETURN(JsonComponent c, ComponentOf(spec, where));
  ARACH_ASSIGN_OR_RETURN(const std::string type, c.Type());
  std::unique_ptr<PreTokenizer> out;
  if (type == "ByteLevel") {
    ARACH_ASSIGN_OR_RETURN(const bool add_prefix_space, c.Bool("add_prefix_space", true));
    ARACH_ASSIGN_OR_RETURN(const bool use_regex, c.Bool("use_regex", true));
    c.Ignore("trim_offsets");  // offsets only
    std::shared_ptr<const Regex> regex;
    if (use_regex) {
      ARACH_ASSIGN_OR_RETURN(regex, Regex::Compile(kGpt2Pattern));
    }
    out = std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, std::move(regex));
  } else if (type == "Split") {
    ARACH_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> regex, ReadPattern(c, "pattern"));
    ARACH_ASSIGN_OR_RETURN(const SplitBehavior behavior, ReadBehavior(c, ""));
    ARACH_ASSIGN_OR_RETURN(const bool invert, c.Bool("invert", false));
    out = std::make_unique<Split>(std::move(regex), behavior, invert);
  } else if (type == "Metaspace") {
    ARACH_ASSIGN_OR_RETURN(std::string replacement, c.String("replacement", "\xe2\x96\x81"));
    ARACH_ASSIGN_OR_RETURN(const PrependScheme scheme, ReadPrependScheme(c));
    ARACH_ASSIGN_OR_RETURN(const bool split, c.Bool("split", true));
    c.Ignore("str_rep");  // an older serialisation of `replacement`
    ARACH_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> regex, Regex::Compile(Regex::Escape(replacement)));
    out = std::make_unique<MetaspacePreTokenizer>(std::move(replacement), scheme, split, std::move(regex));
  } else if (type == "Digits") {
    ARACH_ASSIGN_OR_RETURN(const bool individual, c.Bool("individual_digits", false));
    ARACH_ASSIGN_OR_RETURN(out, RegexSplit(R"(\p{N})", individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false));
  } else if (type == "Punctuation") {
    ARACH_ASSIGN_OR_RETURN(const SplitBehavior behavior, ReadBehavior(c, "Isolated"));
    // ASCII punctuation (which includes symbols such as $ + < = > ^ ` | ~) or any Unicode punctuation.
    ARACH_ASSIGN_OR_RETURN(out, RegexSplit(R"([\p{P}!-/:-@\[-`{-~])", behavior, false));
  } else if (type == "Whitespace") {
    ARACH_ASSIGN_OR_RETURN(out, RegexSplit(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, /*invert=*/true));
  } else if (type == "WhitespaceSplit") {
    ARACH_ASSIGN_OR_RETURN(out, RegexSplit(R"(\s+)", SplitBehavior::kRemoved, false));
  } else if (type == "Sequence") {
    ARACH_ASSIGN_OR_RETURN(const nlohmann::json* list, c.Array("pretokenizers"));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      ARACH_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> step, ParsePreTokenizer((*list)[i], c.Child("pretokenizers", i)));
      steps.push_back(std::move(step));
    }
    out = std::make_unique<SequencePreTokenizer>(std::move(steps));
  } else {
    return c.Error(absl::StrCat("pre-tokenizer type \"", type,
                                "\" is not supported (ByteLevel, Split, Metaspace, Digits, Punctuation, Whitespace, "
                                "WhitespaceSplit, Sequence)"));
  }
  ARACH_RETURN_IF_ERROR(c.CheckAllRead());
  return out;
}

}  // namespace arach
