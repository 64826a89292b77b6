#include "bench/bench_flags.h"

#include "absl/flags/flag.h"
#include "engine/bundle/model_bundle.h"

ABSL_FLAG(std::vector<std::string>, models, {}, "extra model folders");
ABSL_FLAG(std::vector<std::string>, fixtures, std::vector<std::string>({"gpt2-tiny", "neox-tiny", "llama-stories260k"}),
          "fixture models (under --fixtures_dir)");
ABSL_FLAG(std::vector<std::string>, tokenizers, {}, "tokenizer folders (default: the fixtures' qwen3, llama3 and llama2)");
ABSL_FLAG(std::string, fixtures_dir, "../shared/fixtures", "fixtures folder");
ABSL_FLAG(std::vector<std::string>, presets, std::vector<std::string>({"gpt2/124m"}), "make-model presets ARCH/NAME");
ABSL_FLAG(std::string, preset, "gpt2/124m", "make-model preset ARCH/NAME (variant_bench writes it with a random adapter)");
ABSL_FLAG(std::string, model, "", "a model folder instead of the preset");
ABSL_FLAG(std::string, scratch, "/tmp/arach-bench-models", "where make-model presets are written");
ABSL_FLAG(std::string, device, "cpu", "cpu | cuda (this build's CUDA backend: " ARACH_CUDA_BUILD_NOTE ")");
ABSL_FLAG(std::string, weight_dtype, "auto", arach::kWeightDTypeFlagHelp);
ABSL_FLAG(std::string, kv_cache_dtype, "auto", arach::kKvCacheDTypeFlagHelp);

ABSL_FLAG(std::vector<std::string>, batches, std::vector<std::string>({"1", "8"}), "decode batch sizes (sequences decoded together)");
ABSL_FLAG(int, prompt_len, 128, "prompt tokens per sequence");
ABSL_FLAG(int, decode_steps, 32, "decode steps measured");
ABSL_FLAG(int, repeats, 3, "repetitions (the median is reported)");
ABSL_FLAG(int, prefill_batch, 1, "sequences prefilled together");

ABSL_FLAG(std::vector<std::string>, concurrency, std::vector<std::string>({"1", "4", "16"}), "requests in flight");
ABSL_FLAG(int, requests_per_client, 2, "requests each client sends");
ABSL_FLAG(int, max_tokens, 32, "generated tokens per request");
ABSL_FLAG(std::string, variant, "base", "base | arach | skip | arach+skip");
ABSL_FLAG(int, max_num_batched_tokens, 512, "engine: tokens per step");
ABSL_FLAG(int, shared_prefix, 0,
          "engine: the first N prompt tokens are the same in every request (a system prompt), the rest differ; "
          "the prefix cache is on (off when 0: identical prompts would be served from it)");
ABSL_FLAG(bool, score, false,
          "engine: score requests (every prompt position's log-prob, rank and greedy flag, as arach-run score, "
          "echo and the gRPC Score call compute them; no token generated) instead of generations");
ABSL_FLAG(bool, embed, false,
          "engine: embedding requests (the prompt's pooled hidden states, as /v1/embeddings and the gRPC Embed call compute "
          "it; no token generated) instead of generations");
ABSL_FLAG(std::string, pooling, "",
          "engine, with --embed: pool as last_token, mean or first_token (as a Sentence-Transformers folder would say); "
          "empty: as the model's folder says");
ABSL_FLAG(int, lora_rank, 0,
          "engine: every request runs with a random LoRA adapter of this rank on every projection of the model (written "
          "under --scratch with tools/make_model's make_lora); 0: the base model");
ABSL_FLAG(int, lora_adapters, 1,
          "engine, with --lora_rank: this many random adapters, request i naming adapter i mod N (the mix a multi-tenant "
          "server sees)");
ABSL_FLAG(int, lora_slots, 0,
          "engine, with --lora_adapters: adapters on the device at once (the server's --max_loras); fewer than "
          "--lora_adapters swaps them between host and device (--max_cpu_loras); 0: every one on the device");
ABSL_FLAG(int, prompt_top_logprobs, 0,
          "engine: with --score, also each position's N most likely tokens (as echo with logprobs N and "
          "prompt_logprobs N ask; at most 20)");
ABSL_FLAG(bool, predict, false,
          "engine: every request carries its own output as its prediction (OpenAI's predicted outputs; the output is "
          "computed once before the figures): speculative decoding where the prediction is right throughout");
ABSL_FLAG(int, prediction_edits, 0,
          "engine: with --predict, every Nth token of the prediction is changed (an edited text; 1: a prediction "
          "wrong throughout; 0: none)");
ABSL_FLAG(int, prediction_draft_tokens, 8, "engine: draft tokens a step checks from a prediction (with --predict)");
ABSL_FLAG(int, prompt_lookup_tokens, 0, "engine: draft tokens a step checks by prompt lookup (0: off)");
ABSL_FLAG(int, speculative_disable_by_batch_size, 0, "engine: no drafts in a step with at least this many running or waiting sequences (0: any)");
ABSL_FLAG(float, temperature, 0.0f, "engine: the requests' temperature (0: greedy)");
ABSL_FLAG(int, top_k, 0, "engine: the requests' top_k (0: off)");
ABSL_FLAG(float, top_p, 1.0f, "engine: the requests' top_p (1: off)");
ABSL_FLAG(std::string, json_schema, "", "engine: every request's output must match this JSON Schema file (structured output)");
ABSL_FLAG(int, vocab, 151936, "sampling: tokens in each row of logits; draft_lookup: the vocabulary drawn from");
ABSL_FLAG(int, rows, 64, "sampling: rows of logits per pass");
ABSL_FLAG(int, schemas, 50, "distinct schemas compiled");
ABSL_FLAG(int, steps, 64, "constraint: tokens walked through each compiled schema; draft_lookup: decode steps timed per context");
ABSL_FLAG(std::vector<std::string>, contexts, std::vector<std::string>({"1000", "10000", "100000"}), "draft_lookup: sequence lengths");
