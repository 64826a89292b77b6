#include "engine/constraint/constraint_compiler.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/json_nesting.h"
#include "engine/core/status.h"
#include "engine/output/detokenizer.h"

#ifdef ARACH_WITH_XGRAMMAR
#include <xgrammar/xgrammar.h>
#endif

namespace arach {

#ifdef ARACH_WITH_XGRAMMAR

bool StructuredOutputAvailable() { return true; }
const char* StructuredOutputBackend() { return "xgrammar 0.2.5"; }

class CompiledConstraint {
 public:
  CompiledConstraint(xgrammar::CompiledGrammar grammar, int vocab_size) : grammar(std::move(grammar)), vocab_size(vocab_size) {}
  xgrammar::CompiledGrammar grammar;
  int vocab_size;
};

namespace {

// An EBNF string literal of `text` (xgrammar's GBNF-style escapes).
std::string EbnfLiteral(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += absl::StrCat("\\x", c < 0x10 ? "0" : "", absl::Hex(c));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// xgrammar's error text without its log prefix ("[12:00:00] /path/file.cc:75: "), its assertion wording
// ("Check failed: (err.empty()) is false: "), the copy of the input it appends (" The JSON string is:...") and
// the trailing newline, and at most kMaxReasonBytes long: an error never echoes a client's input at length
// (a 10 kB schema in a gRPC status would be refused as oversized metadata).
std::string XgrammarReason(std::string what) {
  constexpr size_t kMaxReasonBytes = 400;
  if (!what.empty() && what[0] == '[') {
    const size_t close = what.find("] ");
    const size_t source = close == std::string::npos ? close : what.find(": ", close);
    if (source != std::string::npos && what.find(".cc:", close) < source) what = what.substr(source + 2);
  }
  constexpr absl::string_view kCheckFailed = "Check failed: ";
  if (absl::StartsWith(what, kCheckFailed)) {
    const size_t reason = what.find(" is false: ");
    if (reason != std::string::npos) what = what.substr(reason + 11);
  }
  if (const size_t echo = what.find(" The JSON string is:"); echo != std::string::npos) what.resize(echo);
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  return ClipForError(what, kMaxReasonBytes);
}

// Each token's raw bytes (special tokens empty, but for kWritableSpecialTokens), as xgrammar's RAW vocabulary.
std::vector<std::string> RawVocabulary(const Tokenizer& tokenizer, int vocab_size) {
  // A plain token before each one, so that a SentencePiece piece's leading "▁" decodes to the space it adds
  // inside a text rather than being dropped as at the start of one.
  std::vector<int32_t> context;
  if (absl::StatusOr<std::vector<int32_t>> a = tokenizer.Encode("a", /*add_special_tokens=*/false); a.ok() && !a->empty()) {
    context = {a->back()};
  }
  std::vector<std::string> vocab(static_cast<size_t>(vocab_size));
  for (absl::string_view marker : kWritableSpecialTokens) {
    if (std::optional<int32_t> id = tokenizer.TokenToId(marker); id && *id >= 0 && *id < vocab_size) vocab[static_cast<size_t>(*id)] = std::string(marker);
  }
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (tokenizer.IsSpecial(id)) continue;
    absl::StatusOr<std::string> piece = DecodePiece(tokenizer, context, id, /*skip_special_tokens=*/false);
    if (piece.ok()) vocab[static_cast<size_t>(id)] = std::move(*piece);
  }
  return vocab;
}

}  // namespace

struct ConstraintCompiler::Impl {
  Impl(const Tokenizer& tokenizer, int vocab_size, std::vector<int32_t> stop_tokens, Options options)
      : tokenizer(tokenizer), vocab_size(vocab_size), stop_tokens(std::move(stop_tokens)), options(options) {}
  const Tokenizer& tokenizer;
  int vocab_size;
  std::vector<int32_t> stop_tokens;
  Options options;
  std::once_flag once;
  std::shared_ptr<xgrammar::GrammarCompiler> compiler;  // shared with compilations that outlive a call
  std::shared_ptr<std::atomic<int>> abandoned = std::make_shared<std::atomic<int>>(0);
  static constexpr int kMaxAbandoned = 2;

  xgrammar::GrammarCompiler& Compiler() {
    std::call_once(once, [this] {
      std::vector<int32_t> stops;
      for (int32_t id : stop_tokens) {
        if (id >= 0 && id < vocab_size) stops.push_back(id);
      }
      xgrammar::TokenizerInfo info(RawVocabulary(tokenizer, vocab_size), xgrammar::VocabType::RAW, vocab_size, stops, false);
      compiler = std::make_shared<xgrammar::GrammarCompiler>(info, /*max_threads=*/1, /*cache_enabled=*/true, options.cache_bytes);
    });
    return *compiler;
  }
};

ConstraintCompiler::ConstraintCompiler(const Tokenizer& tokenizer, int vocab_size, std::vector<int32_t> stop_tokens, Options options)
    : impl_(std::make_unique<Impl>(tokenizer, vocab_size, std::move(stop_tokens), options)) {}

ConstraintCompiler::~ConstraintCompiler() = default;

absl::StatusOr<std::shared_ptr<const CompiledConstraint>> ConstraintCompiler::Compile(const OutputConstraint& constraint,
                                                                                      absl::string_view field) {
  using Kind = OutputConstraint::Kind;
  if (constraint.text.size() > kMaxConstraintBytes) {
    return InvalidField(field, absl::StrCat(constraint.text.size(), " bytes exceed the limit of ", kMaxConstraintBytes));
  }
  if (constraint.kind == Kind::kJsonSchema || constraint.kind == Kind::kStructuralTag) {
    // xgrammar parses JSON recursively: 100,000 nested lists crashed the server (stack overflow).
    ARACH_RETURN_IF_ERROR(CheckJsonNesting(constraint.text, field));
  }
  if (constraint.kind == Kind::kChoice) {
    if (constraint.choices.empty()) return InvalidField(field, "give at least one choice");
    if (constraint.choices.size() > kMaxChoices) {
      return InvalidField(field, absl::StrCat(constraint.choices.size(), " choices exceed the limit of ", kMaxChoices));
    }
    size_t bytes = 0;
    for (const std::string& choice : constraint.choices) bytes += choice.size();
    if (bytes > kMaxConstraintBytes) return InvalidField(field, absl::StrCat("the choices' ", bytes, " bytes exceed the limit of ", kMaxConstraintBytes));
  }
  if (impl_->abandoned->load() >= Impl::kMaxAbandoned) {
    return absl::ResourceExhaustedError(absl::StrCat(field, ": earlier constraints are still compiling past the time limit; retry later"));
  }
  impl_->Compiler();  // the vocabulary is read once, by the first constrained request
  std::shared_ptr<xgrammar::GrammarCompiler> keep = impl_->compiler;
  std::string ebnf;
  if (constraint.kind == Kind::kChoice) {
    ebnf = "root ::= ";
    for (size_t i = 0; i < constraint.choices.size(); ++i) ebnf += (i > 0 ? " | " : "") + EbnfLiteral(constraint.choices[i]);
  }
  // The compilation runs on its own thread so that it can be given up after the time limit.
  auto task = std::make_shared<std::packaged_task<xgrammar::CompiledGrammar()>>([keep, constraint, ebnf]() {
    switch (constraint.kind) {
      case Kind::kJsonObject: return keep->CompileJSONSchema(R"({"type": "object"})", /*any_whitespace=*/false);
      case Kind::kJsonSchema:
        return keep->CompileJSONSchema(constraint.text, /*any_whitespace=*/false, std::nullopt, std::nullopt, constraint.strict);
      case Kind::kRegex: return keep->CompileRegex(constraint.text);
      case Kind::kChoice: return keep->CompileGrammar(ebnf, "root");
      case Kind::kGrammar: return keep->CompileGrammar(constraint.text, "root");
      case Kind::kStructuralTag: return keep->CompileStructuralTag(constraint.text);
      case Kind::kNone: break;
    }
    throw std::invalid_argument("no constraint");
  });
  std::future<xgrammar::CompiledGrammar> compiled = task->get_future();
  std::shared_ptr<std::atomic<int>> abandoned = impl_->abandoned;
  auto running = std::make_shared<std::atomic<bool>>(true);
  std::thread([task, abandoned, running] {
    (*task)();
    if (!running->exchange(false)) abandoned->fetch_sub(1);  // it had been given up
  }).detach();
  if (compiled.wait_for(impl_->options.compile_timeout) != std::future_status::ready) {
    if (running->exchange(false)) abandoned->fetch_add(1);  // still running: counted until it ends
    return InvalidField(field, absl::StrCat("the ", constraint.KindName(), " did not compile within ",
                                            impl_->options.compile_timeout.count(), " ms; simplify it"));
  }
  running->store(false);
  try {
    return std::make_shared<const CompiledConstraint>(compiled.get(), impl_->vocab_size);
  } catch (const std::exception& e) {
    return InvalidField(field, absl::StrCat("the ", constraint.KindName(), " cannot be compiled: ", XgrammarReason(e.what())));
  }
}

struct ConstraintMatcher::Impl {
  std::shared_ptr<const CompiledConstraint> constraint;
  std::vector<int32_t> stop_tokens;  // what ends the sequence (the override, or the tokenizer info's)
  xgrammar::GrammarMatcher matcher;
  std::vector<int32_t> bitmask;  // [GetBitmaskSize(vocab)]
  int64_t bitmask_size;
  bool fresh = false;            // bitmask holds the tokens allowed now
};

ConstraintMatcher::ConstraintMatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<ConstraintMatcher> ConstraintMatcher::Create(std::shared_ptr<const CompiledConstraint> constraint,
                                                            std::vector<int32_t> stop_tokens) {
  const int vocab_size = constraint->vocab_size;
  std::erase_if(stop_tokens, [&](int32_t id) { return id < 0 || id >= vocab_size; });
  try {
    // xgrammar refuses an empty override: then the tokenizer info's end-of-sequence tokens stand.
    std::optional<std::vector<int32_t>> override_stops;
    if (!stop_tokens.empty()) override_stops = stop_tokens;
    xgrammar::GrammarMatcher matcher(constraint->grammar, override_stops);
    const std::vector<int32_t>& stops = matcher.GetStopTokenIds();
    const int32_t words = xgrammar::GetBitmaskSize(vocab_size);
    return ConstraintMatcher(std::unique_ptr<Impl>(new Impl{std::move(constraint), stops, std::move(matcher),
                                                            std::vector<int32_t>(static_cast<size_t>(words)), words}));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("structured output: ", XgrammarReason(e.what())));
  }
}

ConstraintMatcher::~ConstraintMatcher() = default;
ConstraintMatcher::ConstraintMatcher(ConstraintMatcher&&) noexcept = default;

absl::StatusOr<std::span<const uint32_t>> ConstraintMatcher::AllowedTokens() {
  if (!impl_->fresh) {
    DLTensor tensor{};
    tensor.data = impl_->bitmask.data();
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = 1;
    tensor.dtype = xgrammar::GetBitmaskDLType();
    tensor.shape = &impl_->bitmask_size;
    try {
      impl_->matcher.FillNextTokenBitmask(&tensor);
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("structured output: ", XgrammarReason(e.what())));
    }
    impl_->fresh = true;
  }
  const std::span<const uint32_t> allowed(reinterpret_cast<const uint32_t*>(impl_->bitmask.data()), impl_->bitmask.size());
  const size_t vocab_size = static_cast<size_t>(impl_->constraint->vocab_size);
  bool any = false;
  for (size_t word = 0; word < allowed.size() && !any; ++word) {
    const size_t bits_in_vocab = std::min<size_t>(32, vocab_size - word * 32);
    const uint32_t in_vocab = bits_in_vocab == 32 ? ~0u : (1u << bits_in_vocab) - 1u;
    any = (allowed[word] & in_vocab) != 0;
  }
  if (!any) {
    // A language with no text (a schema whose $ref only refers to itself), or text no token can spell.
    return absl::InvalidArgumentError("allows no next token: no text the model's vocabulary can spell matches it");
  }
  return allowed;
}

bool ConstraintMatcher::Accept(int32_t token) {
  impl_->fresh = false;
  try {
    return impl_->matcher.AcceptToken(token);
  } catch (const std::exception&) {
    return false;
  }
}

bool ConstraintMatcher::OnlyStopAllowed() {
  const absl::StatusOr<std::span<const uint32_t>> allowed = AllowedTokens();
  if (!allowed.ok()) return false;
  const std::vector<int32_t>& stops = impl_->stop_tokens;
  for (size_t word = 0; word < allowed->size(); ++word) {
    for (uint32_t bits = (*allowed)[word]; bits != 0; bits &= bits - 1) {
      const int32_t token = static_cast<int32_t>(word * 32 + static_cast<size_t>(__builtin_ctz(bits)));
      if (std::find(stops.begin(), stops.end(), token) == stops.end()) return false;
    }
  }
  return true;
}

bool ConstraintMatcher::Terminated() const { return impl_->matcher.IsTerminated(); }

#else  // no xgrammar

bool StructuredOutputAvailable() { return false; }
const char* StructuredOutputBackend() {
  return "not built: xgrammar's source was not found at configure time (../shared/third_party/xgrammar-0.2.5 or "
         "FETCHCONTENT_SOURCE_DIR_XGRAMMAR; ARACH_XGRAMMAR=ON downloads it)";
}

class CompiledConstraint {};
struct ConstraintCompiler::Impl {};
struct ConstraintMatcher::Impl {};

ConstraintCompiler::ConstraintCompiler(const Tokenizer&, int, std::vector<int32_t>, Options) : impl_(new Impl) {}
ConstraintCompiler::~ConstraintCompiler() = default;

absl::StatusOr<std::shared_ptr<const CompiledConstraint>> ConstraintCompiler::Compile(const OutputConstraint& constraint,
                                                                                      absl::string_view field) {
  return absl::UnimplementedError(absl::StrCat(field, ": structured output is not available in this server (",
                                               StructuredOutputBackend(), ")"));
}

ConstraintMatcher::ConstraintMatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
absl::StatusOr<ConstraintMatcher> ConstraintMatcher::Create(std::shared_ptr<const CompiledConstraint>, std::vector<int32_t>) {
  return absl::UnimplementedError(absl::StrCat("structured output is not available in this server (", StructuredOutputBackend(), ")"));
}
ConstraintMatcher::~ConstraintMatcher() = default;
ConstraintMatcher::ConstraintMatcher(ConstraintMatcher&&) noexcept = default;
absl::StatusOr<std::span<const uint32_t>> ConstraintMatcher::AllowedTokens() { return absl::UnimplementedError("no structured output"); }
bool ConstraintMatcher::Accept(int32_t) { return false; }
bool ConstraintMatcher::OnlyStopAllowed() { return false; }
bool ConstraintMatcher::Terminated() const { return true; }

#endif

}  // namespace arach
