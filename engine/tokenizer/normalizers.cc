#include "engine/tokenizer/normalizers.h"

#include <unicode/uchar.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/status.h"
#include "engine/tokenizer/json_component.h"
#include "engine/tokenizer/regex.h"
#include "engine/tokenizer/unicode.h"

namespace arach {
namespace {

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(NormalizationForm form) : form_(form) {}
  absl::StatusOr<std::string> Normalize(std::string text) const override { return arach::Normalize(form_, text); }

 private:
  NormalizationForm form_;
};

class Lowercase final : public Normalizer {
 public:
  absl::StatusOr<std::string> Normalize(std::string text) const override { return ToLower(text); }
};

// Prepends a string to every non-empty piece (SentencePiece's dummy prefix, "▁").
class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  absl::StatusOr<std::string> Normalize(std::string text) const override {
    return text.empty() ? text : absl::StrCat(prefix_, text);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::shared_ptr<const Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  absl::StatusOr<std::string> Normalize(std::string text) const override { return pattern_->ReplaceAll(text, content_); }

 private:
  std::shared_ptr<const Regex> pattern_;
  std::string content_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  absl::StatusOr<std::string> Normalize(std::string text) const override {
    return std::string(StripWhitespace(text, left_, right_));
  }

 private:
  bool left_, right_;
};

// Removes combining marks (Mn) — after an NFD/NFKD this strips accents.
class StripAccents final : public Normalizer {
 public:
  absl::StatusOr<std::string> Normalize(std::string text) const override {
    ARACH_ASSIGN_OR_RETURN(std::vector<CodePoint> chars, DecodeUtf8(text));
    std::string out;
    for (const CodePoint& c : chars) {
      if (u_charType(static_cast<UChar32>(c.value)) != U_NON_SPACING_MARK) out.append(text, c.offset, c.length);
    }
    return out;
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  absl::StatusOr<std::string> Normalize(std::string text) const override {
    for (const auto& step : steps_) {
      ARACH_ASSIGN_OR_RETURN(text, step->Normalize(std::move(text)));
    }
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const nlohmann::json& spec, const std::string& where) {
  ARACH_ASSIGN_OR_RETURN(JsonComponent c, ComponentOf(spec, where));
  ARACH_ASSIGN_OR_RETURN(const std::string type, c.Type());
  std::unique_ptr<Normalizer> out;
  if (type == "NFC" || type == "NFKC" || type == "NFD" || type == "NFKD") {
    const NormalizationForm form = type == "NFC"    ? NormalizationForm::kNfc
                                   : type == "NFKC" ? NormalizationForm::kNfkc
                                   : type == "NFD"  ? NormalizationForm::kNfd
                                                    : NormalizationForm::kNfkd;
    out = std::make_unique<UnicodeForm>(form);
  } else if (type == "Lowercase") {
    out = std::make_unique<Lowercase>();
  } else if (type == "Prepend") {
    ARACH_ASSIGN_OR_RETURN(std::string prefix, c.String("prepend"));
    out = std::make_unique<Prepend>(std::move(prefix));
  } else if (type == "Replace") {
    ARACH_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> pattern, ReadPattern(c, "pattern"));
    ARACH_ASSIGN_OR_RETURN(std::string content, c.String("content"));
    out = std::make_unique<ReplaceNormalizer>(std::move(pattern), std::move(content));
  } else if (type == "Strip") {
    ARACH_ASSIGN_OR_RETURN(const bool left, c.Bool("strip_left", true));
    ARACH_ASSIGN_OR_RETURN(const bool right, c.Bool("strip_right", true));
    out = std::make_unique<StripNormalizer>(left, right);
  } else if (type == "StripAccents") {
    out = std::make_unique<StripAccents>();
  } else if (type == "Sequence") {
    ARACH_ASSIGN_OR_RETURN(const nlohmann::json* list, c.Array("normalizers"));
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Normalizer> step, ParseNormalizer((*list)[i], c.Child("normalizers", i)));
      steps.push_back(std::move(step));
    }
    out = std::make_unique<SequenceNormalizer>(std::move(steps));
  } else {
    return c.Error(absl::StrCat("normalizer type \"", type,
                                "\" is not supported (NFC, NFKC, NFD, NFKD, Lowercase, Prepend, Replace, Strip, StripAccents, Sequence)"));
  }
  ARACH_RETURN_IF_ERROR(c.CheckAllRead());
  return out;
}

}  // namespace arach
