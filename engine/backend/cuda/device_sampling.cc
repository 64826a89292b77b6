#include "engine/backend/cuda/device_sampling.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach::cuda {

void SamplingRowParams::Add(const SamplerInput& input, int vocab_size) {
  const SamplingParams& p = *input.params;
  const bool is_greedy = p.greedy();
  greedy.push_back(is_greedy ? 1 : 0);
  temperature.push_back(is_greedy ? 1.0f : p.temperature);
  const bool uses_top_k = !is_greedy && p.top_k > 0 && p.top_k < vocab_size;
  top_k.push_back(uses_top_k ? p.top_k : vocab_size);
  const bool uses_top_p = !is_greedy && p.top_p < 1.0f;
  top_p.push_back(uses_top_p ? p.top_p : 1.0f);
  min_p.push_back(is_greedy ? 0.0f : p.min_p);
  seed.push_back(input.seed);
  counter.push_back(static_cast<uint64_t>(std::max(0, input.num_generated)));
  any_sampled = any_sampled || !is_greedy;
  any_top_k = any_top_k || uses_top_k;
  any_top_p = any_top_p || uses_top_p;
}

DeviceSampler::DeviceSampler(Backend& backend, CUstream_st* stream, SamplingKernels kernels)
    : backend_(backend), stream_(stream), kernels_(kernels), upload_(backend) {}

absl::Status DeviceSampler::Sample(const DeviceMatrix& logits, std::span<const SamplerInput> rows, std::span<int32_t> tokens,
                                   std::span<float> logprobs) {
  const int n = static_cast<int>(rows.size());
  const int vocab = static_cast<int>(logits.cols);
  if (n == 0) return absl::OkStatus();
  LogitProcessingBatch lists;
  SamplingRowParams params;
  for (const SamplerInput& row : rows) {
    lists.Add(row, vocab);
    params.Add(row, vocab);
  }
  using U = StagedUpload;
  ARACH_ASSIGN_OR_RETURN(
      const std::vector<const void*> d,
      upload_.Upload({U::Of(lists.bias_start), U::Of(lists.bias_token), U::Of(lists.bias_value), U::Of(lists.repetition_penalty),
                      U::Of(lists.repeated_start), U::Of(lists.repeated_token), U::Of(lists.presence_penalty),
                      U::Of(lists.frequency_penalty), U::Of(lists.generated_start), U::Of(lists.generated_token),
                      U::Of(lists.generated_count), U::Of(lists.allowed_word_start), U::Of(lists.allowed_words),
                      U::Of(lists.suppressed_start), U::Of(lists.suppressed_token), U::Of(params.temperature),
                      U::Of(params.top_k), U::Of(params.top_p), U::Of(params.min_p), U::Of(params.greedy), U::Of(params.seed),
                      U::Of(params.counter)}));
  const auto ints = [&d](size_t i) { return static_cast<const int32_t*>(d[i]); };
  const auto floats = [&d](size_t i) { return static_cast<const float*>(d[i]); };
  SamplingArgs a;
  LogitProcessingArgs& l = a.processing;
  l.rows = n;
  l.vocab = vocab;
  l.bias_start = ints(0);
  l.bias_token = ints(1);
  l.bias_value = floats(2);
  l.repetition_penalty = floats(3);
  l.repeated_start = ints(4);
  l.repeated_token = ints(5);
  l.presence_penalty = floats(6);
  l.frequency_penalty = floats(7);
  l.generated_start = ints(8);
  l.generated_token = ints(9);
  l.generated_count = ints(10);
  l.allowed_word_start = ints(11);
  l.allowed_words = static_cast<const uint32_t*>(d[12]);
  l.suppressed_start = ints(13);
  l.suppressed_token = ints(14);
  a.temperature = floats(15);
  a.top_k = ints(16);
  a.top_p = floats(17);
  a.min_p = floats(18);
  a.greedy = ints(19);
  a.seed = static_cast<const uint64_t*>(d[20]);
  a.counter = static_cast<const uint64_t*>(d[21]);
  a.any_sampled = params.any_sampled;
  a.any_top_k = params.any_top_k;
  a.any_top_p = params.any_top_p;
  a.logits = static_cast<const float*>(logits.data);

  const size_t matrix_bytes = static_cast<size_t>(n) * vocab * sizeof(float);
  ARACH_ASSIGN_OR_RETURN(void* processed, GrowDeviceBuffer(backend_, processed_, matrix_bytes));
  a.processed = static_cast<float*>(processed);
  if (a.any_sampled) {
    ARACH_ASSIGN_OR_RETURN(void* probs, GrowDeviceBuffer(backend_, probs_, matrix_bytes));
    a.probs = static_cast<float*>(probs);
    a.softmax_workspace_bytes = kernels_.softmax_workspace_bytes(n, vocab);
    if (a.softmax_workspace_bytes > 0) {
      ARACH_ASSIGN_OR_RETURN(a.softmax_workspace, GrowDeviceBuffer(backend_, softmax_workspace_, a.softmax_workspace_bytes));
    }
  }
  if (a.any_top_k || a.any_top_p) {
    ARACH_ASSIGN_OR_RETURN(void* renormed, GrowDeviceBuffer(backend_, renormed_, matrix_bytes));
    a.renormed = static_cast<float*>(renormed);
  }
  if (a.any_top_k) {
    if (top_k_state_ == nullptr) {
      const size_t bytes = kernels_.top_k_state_bytes();
      ARACH_ASSIGN_OR_RETURN(top_k_state_, backend_.Allocate(bytes));
      backend_.Fill(top_k_state_->data(), bytes, 0);
    }
    a.top_k_state = top_k_state_->data();
  }
  // The picked ids, then their log-probs: one copy back.
  static_assert(sizeof(int32_t) == sizeof(float));
  const size_t picked_bytes = static_cast<size_t>(n) * sizeof(int32_t) * (logprobs.empty() ? 1 : 2);
  ARACH_ASSIGN_OR_RETURN(void* picked, GrowDeviceBuffer(backend_, picked_, picked_bytes));
  a.tokens = static_cast<int32_t*>(picked);
  if (!logprobs.empty()) a.logprobs = reinterpret_cast<float*>(a.tokens + n);

  const std::string failure = kernels_.launch(a, stream_);
  if (!failure.empty()) return absl::InternalError(absl::StrCat("cuda sampling: ", failure));
  std::vector<int32_t> host(picked_bytes / sizeof(int32_t));
  backend_.CopyToHost(host.data(), picked, picked_bytes);
  ARACH_RETURN_IF_ERROR(backend_.Synchronize());
  std::copy(host.begin(), host.begin() + n, tokens.begin());
  if (!logprobs.empty()) std::memcpy(logprobs.data(), host.data() + n, static_cast<size_t>(n) * sizeof(float));
  return absl::OkStatus();
}

absl::Status DeviceSampler::Score(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                                  std::span<TokenLogprob> top) {
  const int n = static_cast<int>(targets.size());
  if (n == 0) return absl::OkStatus();
  ARACH_ASSIGN_OR_RETURN(const std::vector<const void*> d,
                         upload_.Upload({StagedUpload::HostArray{targets.data(), targets.size() * sizeof(int32_t)}}));
  ScoringArgs a;
  a.rows = n;
  a.vocab = static_cast<int>(logits.cols);
  a.logits = static_cast<const float*>(logits.data);
  a.targets = static_cast<const int32_t*>(d[0]);
  a.top_n = static_cast<int>(top.size() / targets.size());
  const size_t alternatives = top.size();
  // [argmax rows | rank rows | log-prob rows | alternatives' ids | their log-probs]: one copy back.
  static_assert(sizeof(int32_t) == sizeof(float));
  const size_t scored_words = static_cast<size_t>(n) * 3 + 2 * alternatives;
  ARACH_ASSIGN_OR_RETURN(void* scored, GrowDeviceBuffer(backend_, scored_, scored_words * sizeof(int32_t)));
  a.argmax = static_cast<int32_t*>(scored);
  a.ranks = a.argmax + n;
  a.logprobs = reinterpret_cast<float*>(a.ranks + n);
  a.top_tokens = a.ranks + 2 * n;
  a.top_logprobs = reinterpret_cast<float*>(a.top_tokens + alternatives);
  const std::string failure = kernels_.score(a, stream_);
  if (!failure.empty()) return absl::InternalError(absl::StrCat("cuda scoring: ", failure));
  std::vector<int32_t> host(scored_words);
  backend_.CopyToHost(host.data(), scored, scored_words * sizeof(int32_t));
  ARACH_RETURN_IF_ERROR(backend_.Synchronize());
  for (int i = 0; i < n; ++i) {
    scores[i].argmax = host[i];
    scores[i].rank = host[n + i];
    std::memcpy(&scores[i].logprob, &host[2 * n + i], sizeof(float));
  }
  const int32_t* top_ids = host.data() + 3 * n;
  for (size_t i = 0; i < alternatives; ++i) {
    top[i].token = top_ids[i];
    std::memcpy(&top[i].logprob, &top_ids[alternatives + i], sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace arach::cuda
