// What the GPU's logit-processing kernel reads (cuda_logit_processing.cu): a LogitProcessingBatch's arrays
// (logit_processing.h) in device memory. Plain data, so that the kernels' headers include nothing newer than C++17.
#pragma once

#include <cstdint>

namespace arach::cuda {

// What LaunchProcessLogits reads: the batch's arrays in device memory.
struct LogitProcessingArgs {
  int rows = 0, vocab = 0;
  const int32_t *bias_start = nullptr, *bias_token = nullptr;
  const float* bias_value = nullptr;
  const float* repetition_penalty = nullptr;
  const int32_t *repeated_start = nullptr, *repeated_token = nullptr;
  const float *presence_penalty = nullptr, *frequency_penalty = nullptr;
  const int32_t *generated_start = nullptr, *generated_token = nullptr, *generated_count = nullptr;
  const int32_t* allowed_word_start = nullptr;
  const uint32_t* allowed_words = nullptr;
  const int32_t *suppressed_start = nullptr, *suppressed_token = nullptr;
};

}  // namespace arach::cuda
