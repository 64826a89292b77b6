// Sampling on the GPU: the sampler (engine/sampling/sampler.h) run on a step's float32 logits where they are, so
// that a step copies back only the token ids.
//
// The pipeline (cuda_sampling.cu), one launch of each stage for the whole batch: the logit processors (our kernel,
// cuda_logit_processing.cu); for the rows that sample, FlashInfer's softmax with each row's temperature and its
// top-k and top-p renormalisations (flashinfer_sampling.cu); then our draw: min-p, and the first token in id order
// where the cumulative probability passes u * (the kept mass), u = CounterUniform(seed, tokens generated so far):
// the CPU sampler's rule and the CPU sampler's uniform. Greedy rows take the argmax of their processed logits (the
// lowest id among equal maxima, as the CPU).
//
// Why our own draw: FlashInfer v0.6.9's sampling kernels take one Philox seed per launch and key each row's stream
// by its place in the batch, so a request's tokens would depend on its neighbours. Keyed by (seed, counter), a
// seeded request draws the same tokens in any batch, as on the CPU.
//
// Where the GPU's tokens may differ from the CPU sampler's (greedy rows never do): its probabilities are float32
// softmax outputs where the CPU sums unnormalised exponentials in double, so a draw that falls within rounding of a
// boundary between two tokens can go either way; and FlashInfer's renormalisations keep every token tied with the
// k-th largest (top-k) or with the last one needed to reach top_p, where the CPU keeps exactly k, or cuts at the
// exact token, lowest id first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "engine/backend/backend.h"
#include "engine/backend/cuda/logit_processing.h"
#include "engine/backend/cuda/sampling_args.h"
#include "engine/backend/staged_upload.h"
#include "engine/sampling/sampler.h"

namespace arach::cuda {

// The per-row parameters of a batch, packed on the host (plain C++, tested everywhere).
struct SamplingRowParams {
  std::vector<float> temperature, top_p, min_p;
  std::vector<int32_t> top_k, greedy;
  std::vector<uint64_t> seed, counter;
  bool any_sampled = false, any_top_k = false, any_top_p = false;

  void Add(const SamplerInput& input, int vocab_size);
};

class DeviceSampler {
 public:
  // Memory through `backend`, work queued on `stream` through `kernels`.
  DeviceSampler(Backend& backend, CUstream_st* stream, SamplingKernels kernels);

  // Picks tokens[i] for rows[i] (its params, context, counter, seed, suppressed and allowed tokens; its logits span
  // is not read) from row i of `logits` ([rows.size(), vocab] float32 in device memory, dense, left unchanged), and
  // where `logprobs` is not empty its log-prob under the model's distribution (log-softmax of the unprocessed
  // logits). Uploads the batch's lists in one transfer and copies back only ids and log-probs; waits for them and
  // returns the backend's errors.
  absl::Status Sample(const DeviceMatrix& logits, std::span<const SamplerInput> rows, std::span<int32_t> tokens,
                      std::span<float> logprobs);
  // Backend::ScoreRows where the logits are: uploads the targets, copies back only the scores and alternatives,
  // waits for them.
  absl::Status Score(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                     std::span<TokenLogprob> top);

 private:
  Backend& backend_;
  CUstream_st* stream_;
  SamplingKernels kernels_;
  StagedUpload upload_;
  std::unique_ptr<DeviceBuffer> processed_, probs_, renormed_, softmax_workspace_, picked_, scored_;
  std::unique_ptr<DeviceBuffer> top_k_state_;  // allocated and zeroed once
};

}  // namespace arach::cuda
