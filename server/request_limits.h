// Size limits on request fields, checked before any work (INVALID_ARGUMENT naming the field).
#pragma once

#include <cstddef>

namespace arach::server {

struct RequestLimits {
  size_t max_prompt_bytes = 1 << 20;  // prompt.text / score input text
  size_t max_tokenize_bytes = 8 << 20;  // one text of a Tokenize request (whole evaluation corpora)
  int max_detokenize_ids = 1 << 20;     // one id list of a Detokenize request
  int max_stop_strings = 16;
  size_t max_stop_bytes = 256;        // each stop string
  int max_stop_token_ids = 64;
  int max_score_inputs = 64;
  int max_tokens = 4096;              // max_tokens of one request
  int max_prompt_tokens = 0;          // prompt tokens of one request or score input (0 = the model's context)
};

}  // namespace arach::server
