// arach-run: the engine offline. `arach-run --help` lists the commands; `arach-run COMMAND --help` lists
// that command's flags with their defaults.
//   arach-run generate   --model DIR (--prompt TEXT | --ids 1,2,3) [--max_new_tokens N] [--temperature T
//                        --top_k K --top_p P --min_p M --repetition_penalty R --seed S --stop a,b --ignore_eos]
//   arach-run score      --model DIR (--text TEXT | --file F | --ids ...) [--window N] [--per_token]
//   arach-run logits     --model DIR --ids 1,2,3 --out FILE        (prints "T V")
//   arach-run tokenize   --model DIR [--add_special_tokens] < lines of JSON strings   (prints JSON arrays of ids)
//   arach-run detokenize --model DIR [--skip_special_tokens] < lines of JSON id arrays (prints JSON strings)
//   arach-run make-model --arch gpt2|gpt_neox|llama|mistral|qwen2|qwen3 --preset NAME --out DIR [--model_seed N]
//                        [--dtype F32|F16|BF16] [--tokenizer_from DIR]
//   arach-run chat-template (--model DIR | --tokenizer_config FILE) --conversation FILE.json
//                        [--add_generation_prompt] [--extra JSON] [--chat_template FILE]   (prints the prompt)
//   arach-run devices
// generate, score and logits take --arach [--arach-offset B] [--arach-hub-embedding FILE:KEY] and
// --adapter FILE --skip. Flag names may be written with hyphens or underscores.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "engine/bundle/model_bundle.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cmdline/flag_names.h"
#include "engine/backend/cpu/openblas_setup.h"
#include "cmdline/subcommands.h"
#include "engine/backend/backend.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "tools/arach_run/commands.h"

ABSL_FLAG(std::string, model, "", "model folder (Hugging Face layout)");
ABSL_FLAG(std::string, device, "cpu", "cpu | cuda (this build's CUDA backend: " ARACH_CUDA_BUILD_NOTE ")");
ABSL_FLAG(std::string, prompt, "", "generate: prompt text");
ABSL_FLAG(std::string, ids, "", "token ids, comma separated");
ABSL_FLAG(int, max_new_tokens, 32, "generate: tokens to generate");
ABSL_FLAG(bool, ignore_eos, false, "generate: keep going after an end-of-sequence token");
ABSL_FLAG(double, temperature, 0.0, "generate: sampling temperature (0 = greedy)");
ABSL_FLAG(int, top_k, 0, "generate: keep the k most likely tokens (0 = all)");
ABSL_FLAG(double, top_p, 1.0, "generate: nucleus sampling mass");
ABSL_FLAG(double, min_p, 0.0, "generate: drop tokens below min_p x the top probability");
ABSL_FLAG(double, repetition_penalty, 1.0, "generate: > 1 discourages repeated tokens");
ABSL_FLAG(int64_t, seed, -1, "generate: sampling seed (-1 = random)");
ABSL_FLAG(std::vector<std::string>, stop, {}, "generate: stop strings, comma separated");
ABSL_FLAG(int, prefill_chunk, 0, "prompt tokens per forward step (0 = whole prompt)");
ABSL_FLAG(bool, json, false, "generate: print a JSON object");
ABSL_FLAG(std::string, text, "", "score: text to score");
ABSL_FLAG(std::string, file, "", "score: text file to score");
ABSL_FLAG(int, window, 0, "score: tokens scored per window (0 = min(context - 1, 1024))");
ABSL_FLAG(int, max_windows, 0, "score: windows to score (0 = all)");
ABSL_FLAG(bool, per_token, false, "score: print every token's log-prob");
ABSL_FLAG(std::string, out, "", "logits: output file; make-model: output folder");
ABSL_FLAG(int, block_size, 16, "tokens per KV-cache block");
ABSL_FLAG(int, cpu_threads, 0, "CPU backend threads (0: the CPUs the process may use: affinity mask and cgroup quota)");
ABSL_FLAG(std::string, weight_dtype, "auto", arach::kWeightDTypeFlagHelp);
ABSL_FLAG(std::string, kv_cache_dtype, "auto", arach::kKvCacheDTypeFlagHelp);
ABSL_FLAG(int64_t, kv_cache_bytes, 0, "KV-cache pool size in bytes (0 = room for a few full-context sequences)");
ABSL_FLAG(std::string, arch, "gpt2", "make-model: gpt2 | gpt_neox | llama | mistral | qwen2 | qwen3");
ABSL_FLAG(std::string, preset, "tiny",
          "make-model: tiny, 124m, 355m (gpt2); tiny, 160m, 410m (gpt_neox); tiny, 1b (llama: Llama 3.2 1B); tiny, 7b "
          "(mistral); tiny, 0.5b (qwen2: Qwen2.5-0.5B); tiny, 0.6b (qwen3)");
ABSL_FLAG(uint64_t, model_seed, 0, "make-model: random seed of the weights");
ABSL_FLAG(std::string, dtype, "", "make-model: F32 | F16 | BF16 (default: the family's usual)");
ABSL_FLAG(std::string, tokenizer_from, "", "make-model: copy the tokenizer files of this folder");
ABSL_FLAG(bool, with_adapter, false, "make-model: also write a random adapter, preproj.safetensors");
ABSL_FLAG(bool, arach, false, "run the ARACH variant (hub stream)");
ABSL_FLAG(double, arach_offset, -0.5, "ARACH logit offset b");
ABSL_FLAG(std::string, arach_hub_embedding, "", "ARACH hub embedding FILE.safetensors:KEY (default: derived from the embeddings)");
ABSL_FLAG(uint64_t, hub_seed, 0, "seed of the derived hub embedding");
ABSL_FLAG(std::string, adapter, "", "pre-projection + skip adapter (safetensors)");
ABSL_FLAG(bool, skip, false, "run the skip variant (needs --adapter)");
ABSL_FLAG(std::string, tokenizer_config, "", "chat-template: a tokenizer_config.json (instead of --model)");
ABSL_FLAG(std::string, chat_template, "", "chat-template: a Jinja file that replaces the model's template");
ABSL_FLAG(std::string, conversation, "", "chat-template: a JSON file {\"messages\": [...], \"tools\": [...], \"documents\": [...]}");
ABSL_FLAG(bool, add_generation_prompt, false, "chat-template: end with the assistant turn's header");
ABSL_FLAG(std::string, extra, "", "chat-template: extra template variables as a JSON object");
ABSL_FLAG(bool, add_special_tokens, false, "tokenize: add the special tokens the model expects (BOS ...)");
ABSL_FLAG(bool, skip_special_tokens, false, "detokenize: leave special tokens out of the text");

namespace arach::tools {
namespace {

// Flags of the commands that load a model and run it under a variant.
const std::vector<std::string> kModelFlags = {"model", "device", "cpu_threads", "weight_dtype", "kv_cache_dtype", "block_size", "kv_cache_bytes", "arach", "arach_offset",
                                              "arach_hub_embedding", "hub_seed", "adapter", "skip"};

std::vector<std::string> WithModelFlags(std::vector<std::string> own) {
  own.insert(own.end(), kModelFlags.begin(), kModelFlags.end());
  return own;
}

const std::vector<cmdline::Subcommand>& Commands() {
  static const std::vector<cmdline::Subcommand> commands = {
      {"generate", "one request through the serving engine, text streamed to stdout",
       WithModelFlags({"prompt", "ids", "max_new_tokens", "ignore_eos", "temperature", "top_k", "top_p", "min_p",
                       "repetition_penalty", "seed", "stop", "prefill_chunk", "json"})},
      {"score", "log-probs and perplexity of a text (windows)",
       WithModelFlags({"text", "file", "ids", "window", "max_windows", "per_token"})},
      {"logits", "raw logits of every position to a file", WithModelFlags({"ids", "out", "prefill_chunk"})},
      {"tokenize", "JSON strings on stdin -> JSON id arrays on stdout", {"model", "add_special_tokens"}},
      {"detokenize", "JSON id arrays on stdin -> JSON strings on stdout", {"model", "skip_special_tokens"}},
      {"make-model", "write a random-weight checkpoint at a real model's size",
       {"arch", "preset", "out", "model_seed", "dtype", "tokenizer_from", "with_adapter"}},
      {"chat-template", "render a conversation with a model's chat template (prints the prompt)",
       {"model", "tokenizer_config", "chat_template", "conversation", "add_generation_prompt", "extra"}},
      {"devices", "list CUDA devices", {}},
  };
  return commands;
}

absl::StatusOr<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id)) return absl::InvalidArgumentError(absl::StrCat("--ids: \"", part, "\" is not an integer"));
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<ModelOptions> ModelFlags() {
  ModelOptions options;
  options.model_dir = absl::GetFlag(FLAGS_model);
  if (options.model_dir.empty()) return absl::InvalidArgumentError("--model DIR is required");
  auto device = ParseDeviceKind(absl::GetFlag(FLAGS_device));
  if (!device.ok()) return device.status();
  options.load.device = *device;
  options.load.block_size = absl::GetFlag(FLAGS_block_size);
  options.load.cpu_threads = absl::GetFlag(FLAGS_cpu_threads);
  ARACH_RETURN_IF_ERROR(ParseStorageDTypeFlags(absl::GetFlag(FLAGS_weight_dtype), absl::GetFlag(FLAGS_kv_cache_dtype), options.load));
  if (options.load.block_size <= 0) return absl::InvalidArgumentError("--block_size must be positive");
  const int64_t bytes = absl::GetFlag(FLAGS_kv_cache_bytes);
  if (bytes < 0) return absl::InvalidArgumentError("--kv_cache_bytes must not be negative");
  options.load.kv_cache_bytes = static_cast<size_t>(bytes);
  options.load.default_kv_sequences = 1;
  options.load.hub_embedding = absl::GetFlag(FLAGS_arach_hub_embedding);
  options.load.hub_seed = absl::GetFlag(FLAGS_hub_seed);
  options.load.adapter = absl::GetFlag(FLAGS_adapter);
  options.variant.arach = absl::GetFlag(FLAGS_arach);
  options.variant.arach_offset = static_cast<float>(absl::GetFlag(FLAGS_arach_offset));
  options.variant.skip = absl::GetFlag(FLAGS_skip);
  ARACH_RETURN_IF_ERROR(options.variant.Validate(/*has_adapter=*/!options.load.adapter.empty()));
  return options;
}

absl::Status Dispatch(const std::string& command) {
  if (command == "make-model") {
    MakeModelOptions options;
    options.arch = absl::GetFlag(FLAGS_arch);
    options.preset = absl::GetFlag(FLAGS_preset);
    options.out_dir = absl::GetFlag(FLAGS_out);
    options.seed = absl::GetFlag(FLAGS_model_seed);
    options.dtype = absl::GetFlag(FLAGS_dtype);
    options.tokenizer_from = absl::GetFlag(FLAGS_tokenizer_from);
    options.write_adapter = absl::GetFlag(FLAGS_with_adapter);
    return RunMakeModel(options);
  }
  if (command == "devices") return RunDevices();
  if (command == "chat-template") {
    ChatTemplateOptions options;
    options.model_dir = absl::GetFlag(FLAGS_model);
    options.tokenizer_config = absl::GetFlag(FLAGS_tokenizer_config);
    options.chat_template = absl::GetFlag(FLAGS_chat_template);
    options.conversation = absl::GetFlag(FLAGS_conversation);
    options.add_generation_prompt = absl::GetFlag(FLAGS_add_generation_prompt);
    options.extra = absl::GetFlag(FLAGS_extra);
    return RunChatTemplate(options);
  }
  if (command == "tokenize" || command == "detokenize") {
    TokenizeOptions options;
    options.model_dir = absl::GetFlag(FLAGS_model);
    if (options.model_dir.empty()) return absl::InvalidArgumentError("--model DIR is required");
    options.add_special_tokens = absl::GetFlag(FLAGS_add_special_tokens);
    options.skip_special_tokens = absl::GetFlag(FLAGS_skip_special_tokens);
    return command == "tokenize" ? RunTokenize(options) : RunDetokenize(options);
  }
  auto model = ModelFlags();
  if (!model.ok()) return model.status();
  auto ids = ParseIds(absl::GetFlag(FLAGS_ids));
  if (!ids.ok()) return ids.status();
  if (command == "generate") {
    GenerateOptions options;
    options.model = *model;
    options.prompt = absl::GetFlag(FLAGS_prompt);
    options.ids = *ids;
    options.prefill_chunk = absl::GetFlag(FLAGS_prefill_chunk);
    options.json = absl::GetFlag(FLAGS_json);
    SamplingParams& sp = options.sampling;
    sp.max_tokens = absl::GetFlag(FLAGS_max_new_tokens);
    sp.ignore_eos = absl::GetFlag(FLAGS_ignore_eos);
    sp.temperature = static_cast<float>(absl::GetFlag(FLAGS_temperature));
    sp.top_k = absl::GetFlag(FLAGS_top_k);
    sp.top_p = static_cast<float>(absl::GetFlag(FLAGS_top_p));
    sp.min_p = static_cast<float>(absl::GetFlag(FLAGS_min_p));
    sp.repetition_penalty = static_cast<float>(absl::GetFlag(FLAGS_repetition_penalty));
    if (absl::GetFlag(FLAGS_seed) >= 0) sp.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed));
    sp.stop = absl::GetFlag(FLAGS_stop);
    return RunGenerate(options);
  }
  if (command == "score") {
    ScoreOptions options;
    options.model = *model;
    options.text = absl::GetFlag(FLAGS_text);
    options.file = absl::GetFlag(FLAGS_file);
    options.ids = *ids;
    options.window = absl::GetFlag(FLAGS_window);
    options.max_windows = absl::GetFlag(FLAGS_max_windows);
    options.per_token = absl::GetFlag(FLAGS_per_token);
    return RunScore(options);
  }
  if (command == "logits") {
    LogitsOptions options;
    options.model = *model;
    options.ids = *ids;
    options.out = absl::GetFlag(FLAGS_out);
    options.prefill_chunk = absl::GetFlag(FLAGS_prefill_chunk);
    return RunLogits(options);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown command \"", command, "\""));
}

}  // namespace
}  // namespace arach::tools

int main(int argc, char** argv) {
  arach::RestartWithOpenBlasCoreTypeIfNeeded(argv);
  std::vector<std::string> flag_storage;
  std::vector<char*> args = arach::cmdline::NormalizeFlagNames(argc, argv, flag_storage);
  const arach::cmdline::SubcommandStart start = arach::cmdline::StartSubcommand("arach-run", arach::tools::Commands(), argc, args.data());
  if (start.command == nullptr) return start.exit_status;
  const std::string& command = start.command->name;
  const absl::Status status = arach::tools::Dispatch(command);
  if (!status.ok()) {
    std::fprintf(stderr, "arach-run %s: %s\n", command.c_str(), status.ToString().c_str());
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
