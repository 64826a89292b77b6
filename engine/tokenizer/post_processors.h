// tokenizer.json post-processors: the special tokens a model expects around a sequence when it is encoded
// with add_special_tokens (BOS for Llama 2, nothing for Llama 3's ByteLevel-only file). TemplateProcessing,
// BertProcessing, RobertaProcessing, ByteLevel (offsets only: no ids) and Sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arach {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens of a single sequence around `ids`.
  virtual void AddSpecialTokens(std::vector<int32_t>& ids) const = 0;
};

absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const nlohmann::json& spec, const std::string& where);

// [bos] ids [eos], for tokenizer_config.json's add_bos_token / add_eos_token (ids < 0: left out).
std::unique_ptr<PostProcessor> BosEosProcessor(int32_t bos, int32_t eos);

}  // namespace arach
