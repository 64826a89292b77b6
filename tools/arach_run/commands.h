// The subcommands of arach-run. Each takes its options as a plain struct (filled from flags in main.cc)
// and returns a process exit code; errors are printed to stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/variant/variant.h"
#include "tools/make_model/make_model.h"
#include "engine/sampling/sampling_params.h"
#include "engine/bundle/model_bundle.h"

namespace arach::tools {

struct ModelOptions {
  std::string model_dir;
  LoadModelOptions load;
  Variant variant;  // the variant generate / score / logits run under
};

struct GenerateOptions {
  ModelOptions model;
  std::string prompt;            // text prompt (or)
  std::vector<int32_t> ids;      // token ids
  SamplingParams sampling;       // greedy unless a temperature is given
  int prefill_chunk = 0;         // tokens per step (0 = 512)
  bool json = false;             // print one JSON object instead of streamed text
};

struct ScoreOptions {
  ModelOptions model;
  std::string text;              // text to score (or)
  std::string file;              // a text file to score (or)
  std::vector<int32_t> ids;
  int window = 0;                // tokens scored per window (0 = min(context - 1, 1024))
  int max_windows = 0;           // 0 = all
  bool per_token = false;        // print every token's log-prob
};

struct LogitsOptions {
  ModelOptions model;
  std::vector<int32_t> ids;
  std::string out;               // T x V little-endian float32
  int prefill_chunk = 0;
};

absl::Status RunGenerate(const GenerateOptions& options);
absl::Status RunScore(const ScoreOptions& options);
absl::Status RunLogits(const LogitsOptions& options);
struct TokenizeOptions {
  std::string model_dir;             // only its tokenizer files are read
  bool add_special_tokens = false;   // tokenize: the post-processor's special tokens (BOS ...)
  bool skip_special_tokens = false;  // detokenize: leave special tokens out of the text
};
struct ChatTemplateOptions {
  std::string model_dir;         // the model folder (its tokenizer_config.json / chat_template.jinja), or
  std::string tokenizer_config;  // a tokenizer_config.json
  std::string chat_template;     // a Jinja file that replaces the model's template
  std::string conversation;      // {"messages": [...], "tools": [...]}
  bool add_generation_prompt = false;
  std::string extra;             // extra template variables as a JSON object, e.g. {"enable_thinking": false}
};
// Prints the rendered prompt exactly; the template's own errors (raise_exception) are returned as is.
absl::Status RunChatTemplate(const ChatTemplateOptions& options);

// Reads one JSON string per stdin line and prints one JSON array of ids per line.
absl::Status RunTokenize(const TokenizeOptions& options);
// Reads one JSON array of ids per stdin line and prints the decoded text as one JSON string per line.
absl::Status RunDetokenize(const TokenizeOptions& options);
absl::Status RunMakeModel(const MakeModelOptions& options);
// Lists CUDA devices (or says why there are none).
absl::Status RunDevices();

}  // namespace arach::tools
