#include "engine/tokenizer/decoders.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_component.h"
#include "engine/tokenizer/regex.h"
#include "engine/tokenizer/unicode.h"

namespace arach {
namespace {

// Byte-level symbols back to bytes; a token with characters outside the alphabet keeps its own bytes.
// The chain becomes one string.
class ByteLevel final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      auto chars = DecodeUtf8(token);
      std::string mapped;
      bool all_mapped = chars.ok();
      if (chars.ok()) {
        for (const CodePoint& c : *chars) {
          const int byte = alphabet_.ByteOf(c.value);
          if (byte < 0) {
            all_mapped = false;
            break;
          }
          mapped.push_back(static_cast<char>(byte));
        }
      }
      bytes += all_mapped ? mapped : token;
    }
    tokens.assign(1, std::move(bytes));
  }

 private:
  ByteLevelAlphabet alphabet_;
};

// "<0xNN>" pieces become the byte NN.
class ByteFallback final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      if (token.size() == 6 && absl::StartsWith(token, "<0x") && token.back() == '>') {
        int value = 0;
        bool hex = true;
        for (int i = 3; i < 5; ++i) {
          const char c = token[i];
          const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
          hex = hex && digit >= 0;
          value = value * 16 + digit;
        }
        if (hex) token.assign(1, static_cast<char>(value));
      }
    }
  }
};

class Fuse final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

class Replace final : public Decoder {
 public:
  Replace(std::shared_ptr<const Regex> pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      if (DecodeUtf8(token).ok()) token = pattern_->ReplaceAll(token, content_);  // raw bytes pass through
    }
  }

 private:
  std::shared_ptr<const Regex> pattern_;
  std::string content_;
};

// Removes up to `start` leading and `stop` trailing copies of `content` (one character) from every token.
class Strip final : public Decoder {
 public:
  Strip(std::string content, int start, int stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      for (int i = 0; i < start_ && absl::StartsWith(token, content_); ++i) token.erase(0, content_.size());
      for (int i = 0; i < stop_ && absl::EndsWith(token, content_); ++i) token.resize(token.size() - content_.size());
    }
  }

 private:
  std::string content_;
  int start_, stop_;
};

// The replacement character back to spaces; the first token loses the space the pre-tokenizer prepended.
class Metaspace final : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first) : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      std::string out;
      for (size_t at = 0; at < token.size();) {
        if (token.compare(at, replacement_.size(), replacement_) == 0) {
          out.push_back(' ');
          at += replacement_.size();
        } else {
          out.push_back(token[at++]);
        }
      }
      if (i == 0 && strip_first_ && absl::StartsWith(out, " ")) out.erase(0, 1);
      token = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->DecodeChain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> ByteLevelDecoder() { return std::make_unique<ByteLevel>(); }

absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const nlohmann::json& spec, const std::string& where) {
  ARACH_ASSIGN_OR_RETURN(JsonComponent c, ComponentOf(spec, where));
  ARACH_ASSIGN_OR_RETURN(const std::string type, c.Type());
  std::unique_ptr<Decoder> out;
  if (type == "ByteLevel") {
    for (const char* key : {"add_prefix_space", "trim_offsets", "use_regex"}) c.Ignore(key);  // encoding-side options
    out = std::make_unique<ByteLevel>();
  } else if (type == "ByteFallback") {
    out = std::make_unique<ByteFallback>();
  } else if (type == "Fuse") {
    out = std::make_unique<Fuse>();
  } else if (type == "Replace") {
    ARACH_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> pattern, ReadPattern(c, "pattern"));
    ARACH_ASSIGN_OR_RETURN(std::string content, c.String("content"));
    out = std::make_unique<Replace>(std::move(pattern), std::move(content));
  } else if (type == "Strip") {
    ARACH_ASSIGN_OR_RETURN(std::string content, c.String("content"));
    ARACH_ASSIGN_OR_RETURN(const int64_t start, c.Int("start", 0));
    ARACH_ASSIGN_OR_RETURN(const int64_t stop, c.Int("stop", 0));
    if (start < 0 || stop < 0) return c.Error("\"start\" and \"stop\" must be >= 0");
    out = std::make_unique<Strip>(std::move(content), static_cast<int>(start), static_cast<int>(stop));
  } else if (type == "Metaspace") {
    ARACH_ASSIGN_OR_RETURN(std::string replacement, c.String("replacement", "\xe2\x96\x81"));
    bool strip_first = true;
    if (const nlohmann::json* scheme = c.Get("prepend_scheme"); scheme != nullptr) {
      c.Ignore("add_prefix_space");
      if (!scheme->is_string()) return c.Error("\"prepend_scheme\" must be a string");
      strip_first = scheme->get<std::string>() != "never";
    } else {
      ARACH_ASSIGN_OR_RETURN(strip_first, c.Bool("add_prefix_space", true));
    }
    c.Ignore("split");
    c.Ignore("str_rep");
    out = std::make_unique<Metaspace>(std::move(replacement), strip_first);
  } else if (type == "Sequence") {
    ARACH_ASSIGN_OR_RETURN(const nlohmann::json* list, c.Array("decoders"));
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> step, ParseDecoder((*list)[i], c.Child("decoders", i)));
      steps.push_back(std::move(step));
    }
    out = std::make_unique<SequenceDecoder>(std::move(steps));
  } else {
    return c.Error(absl::StrCat("decoder type \"", type,
                                "\" is not supported (ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence)"));
  }
  ARACH_RETURN_IF_ERROR(c.CheckAllRead());
  return out;
}

}  // namespace arach
