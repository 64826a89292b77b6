#include "engine/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "absl/strings/str_cat.h"

namespace arach {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Regex::~Regex() = default;

absl::StatusOr<std::shared_ptr<const Regex>> Regex::Compile(absl::string_view pattern) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                   &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat("regex \"", pattern, "\" does not compile at offset ", error_offset, ": ",
                                                   reinterpret_cast<const char*>(message)));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
  std::shared_ptr<Regex> regex(new Regex());
  regex->pattern_ = std::string(pattern);
  regex->code_ = std::make_unique<Code>();
  regex->code_->code = code;
  return std::shared_ptr<const Regex>(std::move(regex));
}

std::string Regex::Escape(absl::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::vector<std::pair<size_t, size_t>> Regex::FindAll(absl::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH (or a resource limit: no further matches)
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    matches.emplace_back(begin, end);
    if (end > begin) {
      start = end;
    } else {  // an empty match: step over one UTF-8 character
      start = end + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) ++start;
    }
  }
  pcre2_match_data_free(data);
  return matches;
}

std::string Regex::ReplaceAll(absl::string_view text, absl::string_view replacement) const {
  std::string out;
  size_t copied = 0;
  for (const auto& [begin, end] : FindAll(text)) {
    out.append(text.data() + copied, begin - copied);
    out.append(replacement.data(), replacement.size());
    copied = end;
  }
  out.append(text.data() + copied, text.size() - copied);
  return out;
}

}  // namespace arach
