// Structured output on xgrammar: an OutputConstraint compiled to a token-level grammar for one tokenizer, and the
// per-sequence matcher that says which tokens may come next. The tokenizer's vocabulary is given to xgrammar
// as each token's raw bytes (DecodePiece after a neutral token, so byte-level and SentencePiece-style pieces
// alike come out as the text they add), special tokens as empty (never inside a grammar) but for the markers of
// kWritableSpecialTokens; each matcher is
// given the tokens that may end its sequence's complete output (the request's stop ids).
//
// Compilation is done once per constraint (a cache keyed by kind and text, per compiler, i.e. per tokenizer),
// and bounded: a constraint's text at most kMaxConstraintBytes, a choice list at most kMaxChoices, a
// compilation at most `compile_timeout` (a pathological schema is refused with a clear error instead of
// stalling the server; the abandoned compilation runs out in the background, at most kMaxAbandoned at once).
// Built without xgrammar (ARACH_WITH_XGRAMMAR unset), every constraint is UNIMPLEMENTED saying so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/constraint/output_constraint.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach {

inline constexpr size_t kMaxConstraintBytes = 256 * 1024;

// Special tokens a constraint may write, as their text: the markers that open tool calls and reasoning in some
// tokenizers (Mistral's [TOOL_CALLS] and [THINK], Llama 3's <|python_tag|>). Every other special token stays out of
// constrained output (xgrammar never accepts a token without text).
inline constexpr absl::string_view kWritableSpecialTokens[] = {"[TOOL_CALLS]", "[ARGS]",      "[CALL_ID]", "<|python_tag|>",
                                                                 "<tool_call>",  "</tool_call>", "<think>",   "</think>",
                                                                 "[THINK]",      "[/THINK]"};
inline constexpr size_t kMaxChoices = 1024;

// Whether this build enforces constraints, and with what ("xgrammar 0.2.5" or why not).
bool StructuredOutputAvailable();
const char* StructuredOutputBackend();

class CompiledConstraint;  // opaque: the token-level grammar

class ConstraintCompiler {
 public:
  struct Options {
    std::chrono::milliseconds compile_timeout{10000};
    int64_t cache_bytes = 256 << 20;  // compiled grammars kept (least recently used go first)
  };
  // `stop_tokens`: the model's end-of-sequence ids. The tokenizer must outlive the compiler.
  ConstraintCompiler(const Tokenizer& tokenizer, int vocab_size, std::vector<int32_t> stop_tokens, Options options);
  ConstraintCompiler(const Tokenizer& tokenizer, int vocab_size, std::vector<int32_t> stop_tokens)
      : ConstraintCompiler(tokenizer, vocab_size, std::move(stop_tokens), Options{}) {}
  ~ConstraintCompiler();

  // The compiled constraint. INVALID_ARGUMENT naming `field` with xgrammar's reason (a schema, regex or grammar
  // it cannot compile, a constraint over the size bounds, a compilation over the time bound);
  // RESOURCE_EXHAUSTED while too many abandoned compilations still run; UNIMPLEMENTED without xgrammar.
  // Thread-safe.
  absl::StatusOr<std::shared_ptr<const CompiledConstraint>> Compile(const OutputConstraint& constraint, absl::string_view field);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One sequence's place in its constraint. Not thread-safe (the engine's step thread uses it). xgrammar's own
// failures come back as INTERNAL errors (the engine ends that one sequence), never as exceptions.
class ConstraintMatcher {
 public:
  // `stop_tokens`: the tokens that end this sequence (the request's end-of-sequence and stop ids); the
  // constraint allows them once its output is complete. Empty (e.g. ignore_eos): the model's end-of-sequence
  // tokens, which then end a complete output only through the constraint.
  static absl::StatusOr<ConstraintMatcher> Create(std::shared_ptr<const CompiledConstraint> constraint,
                                                  std::vector<int32_t> stop_tokens);
  ~ConstraintMatcher();
  ConstraintMatcher(ConstraintMatcher&&) noexcept;

  // The tokens allowed next, one bit each (bit t of word t / 32), for the sampler to mask the others;
  // INVALID_ARGUMENT when none is (the constraint's language is empty, or no token can continue its text).
  absl::StatusOr<std::span<const uint32_t>> AllowedTokens();
  // Advances past `token`; false when the constraint does not allow it (the caller ends the sequence).
  bool Accept(int32_t token);
  // Nothing but a stop token may come: the output is complete (false on an error: AllowedTokens reports it).
  bool OnlyStopAllowed();
  // A stop token was accepted: the output is complete and ended.
  bool Terminated() const;

 private:
  struct Impl;
  explicit ConstraintMatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace arach
