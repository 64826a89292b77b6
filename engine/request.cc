#include "engine/request.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kDeadline: return "deadline";
    case FinishReason::kError: return "error";
  }
  return "?";
}

const char* RequestKindName(RequestKind kind) {
  switch (kind) {
    case RequestKind::kGenerate:
      return "generate";
    case RequestKind::kScore:
      return "score";
    case RequestKind::kEmbed:
      return "embed";
    case RequestKind::kClassify:
      return "classify";
  }
  return "?";
}

absl::Status ValidateRequest(const EngineRequest& request, const ModelConfig& config, bool has_adapter, int max_embedding_tokens,
                             FieldNames names) {
  const int prompt_len = static_cast<int>(request.prompt.size());
  if (prompt_len == 0) return InvalidField(names, "prompt", "empty");
  ARACH_RETURN_IF_ERROR(CheckTokenIds(request.prompt, config.vocab_size, "prompt", names));
  if (request.kind == RequestKind::kScore) {
    if (prompt_len < 2) return InvalidField(names, "prompt", "at least two tokens are needed to score");
  } else if (request.kind == RequestKind::kClassify) {
    if (request.class_token_ids.empty() || request.class_token_ids.size() > EngineRequest::kMaxClassTokens) {
      return InvalidField(names, "class_token_ids",
                          absl::StrCat("1 to ", EngineRequest::kMaxClassTokens, " tokens are needed to classify"));
    }
    ARACH_RETURN_IF_ERROR(CheckTokenIds(request.class_token_ids, config.vocab_size, "class_token_ids", names));
  } else if (request.kind == RequestKind::kGenerate) {
    ARACH_RETURN_IF_ERROR(request.sampling.Validate(config.vocab_size, names));
  }
  ARACH_RETURN_IF_ERROR(CheckPromptFitsContext(request.prompt.size(), request.kind, config, "prompt", names));
  if (request.kind == RequestKind::kEmbed && prompt_len > max_embedding_tokens) {
    return InvalidField(names, "prompt", absl::StrCat("the input's ", prompt_len, " tokens exceed the ", max_embedding_tokens,
                                                      " the embedding model takes (max_seq_length in its sentence_bert_config.json)"));
  }
  if (request.kind != RequestKind::kClassify && !request.class_token_ids.empty()) {
    return InvalidField(names, "class_token_ids", "only a request to classify returns tokens' logits");
  }
  if (!request.prediction.empty()) {
    if (request.kind != RequestKind::kGenerate) return InvalidField(names, "prediction", "only a generation has an output to predict");
    ARACH_RETURN_IF_ERROR(CheckTokenIds(request.prediction, config.vocab_size, "prediction", names));
    if (request.prediction.size() > static_cast<size_t>(config.max_positions)) {
      return InvalidField(names, "prediction", absl::StrCat("its ", request.prediction.size(), " tokens exceed the model's context of ",
                                                            config.max_positions));
    }
  }
  if (request.prompt_top_logprobs < 0 || request.prompt_top_logprobs > SamplingParams::kMaxTopLogprobs) {
    return InvalidField(names, "prompt_top_logprobs", absl::StrCat(request.prompt_top_logprobs, " must be in [0, ",
                                                                   SamplingParams::kMaxTopLogprobs, "]"));
  }
  if (request.priority < -kMaxPriorityMagnitude || request.priority > kMaxPriorityMagnitude) {
    return InvalidField(names, "priority", absl::StrCat(request.priority, " must be in [-", kMaxPriorityMagnitude, ", ",
                                                        kMaxPriorityMagnitude, "]"));
  }
  return request.variant.Validate(has_adapter, names);
}

absl::Status CheckPromptFitsContext(size_t prompt_len, RequestKind kind, const ModelConfig& config, absl::string_view field,
                                    FieldNames names) {
  const size_t context = static_cast<size_t>(config.max_positions);
  if (kind != RequestKind::kGenerate && prompt_len > context) {
    return InvalidField(names, field, absl::StrCat("the prompt's ", prompt_len, " tokens exceed the model's context of ", context));
  }
  if (kind == RequestKind::kGenerate && prompt_len >= context) {
    return InvalidField(names, field, absl::StrCat("the prompt's ", prompt_len, " tokens leave no room in the model's context of ",
                                                   context, " tokens"));
  }
  return absl::OkStatus();
}

}  // namespace arach
