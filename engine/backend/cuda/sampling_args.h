// What the GPU's sampling pipeline (cuda_sampling.cu) reads and writes, and how DeviceSampler (device_sampling.h)
// reaches it. Plain data, so that the kernels' translation units include nothing newer than C++17.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/backend/cuda/logit_processing_args.h"

struct CUstream_st;  // what cudaStream_t points to

namespace arach::cuda {

// What the pipeline reads and writes, in device memory.
struct SamplingArgs {
  LogitProcessingArgs processing;      // rows, vocab and the processors' lists
  const float* logits = nullptr;       // [rows, vocab] float32: the model's (read only)
  float* processed = nullptr;          // [rows, vocab] float32 scratch: after the logit processors
  float* probs = nullptr;              // [rows, vocab] float32 scratch: the softmax (rows that sample)
  float* renormed = nullptr;           // [rows, vocab] float32 scratch: top-k and top-p write here and into
                                       // probs in turn
  const float* temperature = nullptr;  // [rows]; 1 on greedy rows (their probabilities are not used)
  const int32_t* top_k = nullptr;      // [rows]; vocab = off
  const float* top_p = nullptr;        // [rows]; 1 = off
  const float* min_p = nullptr;        // [rows]; 0 = off
  const int32_t* greedy = nullptr;     // [rows]; 1: the argmax of the processed logits
  const uint64_t* seed = nullptr;      // [rows]
  const uint64_t* counter = nullptr;   // [rows]: tokens the row's request has generated so far
  bool any_sampled = false, any_top_k = false, any_top_p = false;  // which stages run
  void* softmax_workspace = nullptr;   // FlashInfer's softmax over a split vocabulary
  size_t softmax_workspace_bytes = 0;
  void* top_k_state = nullptr;         // FlashInfer's top-k row states (zeroed once, left zeroed by each run)
  int32_t* tokens = nullptr;           // [rows]: the picked ids
  float* logprobs = nullptr;           // [rows] or null: each picked id's log-prob under the model's distribution
};

// What the scoring kernel (Backend::ScoreRows) reads and writes, in device memory: each row's ScoreRow.
struct ScoringArgs {
  int rows = 0, vocab = 0;
  const float* logits = nullptr;     // [rows, vocab] float32 (read only)
  const int32_t* targets = nullptr;  // [rows]; < 0: no target (the argmax only)
  int32_t* argmax = nullptr;         // [rows]: the first largest logit's id
  int32_t* ranks = nullptr;          // [rows]: 1 + the logits above the target's; 0 without a target
  float* logprobs = nullptr;         // [rows]: log softmax at the target; 0 without a target
  int top_n = 0;                     // alternatives per row
  int32_t* top_tokens = nullptr;     // [rows, top_n]: the most likely tokens, most likely first (lower id on ties)
  float* top_logprobs = nullptr;     // [rows, top_n]: their log-probs
};

// The device side (cuda_sampling.cu; the tests' SIMT simulator builds its own copy with FlashInfer's stages
// replaced by host stand-ins).
struct SamplingKernels {
  // Queues the pipeline on `stream`; "" or what failed.
  std::string (*launch)(const SamplingArgs& args, CUstream_st* stream) = nullptr;
  size_t (*softmax_workspace_bytes)(int rows, int vocab) = nullptr;
  size_t (*top_k_state_bytes)() = nullptr;
  // Queues the scoring kernel on `stream`; "" or what failed.
  std::string (*score)(const ScoringArgs& args, CUstream_st* stream) = nullptr;
};
SamplingKernels DeviceSamplingKernels();

}  // namespace arach::cuda
