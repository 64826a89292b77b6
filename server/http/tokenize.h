// vLLM's tokenizer routes, for clients that count or build prompts in tokens (LiteLLM's /tokenize, benchmark
// harnesses building exact-N prompts):
//  - POST /tokenize: {"prompt": TEXT, "add_special_tokens": true} or a chat conversation {"messages", "tools", "documents",
//    "add_generation_prompt", "continue_final_message", "chat_template_kwargs"} rendered exactly as
//    /v1/chat/completions renders it
//    (so `count` equals that request's usage.prompt_tokens) -> {"count", "max_model_len", "tokens"}.
//  - POST /detokenize: {"tokens": [ids]} -> {"prompt": the text they decode to, special tokens included}.
//  - POST /v1/responses/input_tokens (OpenAI's): a Responses API request's prompt-shaping parameters
//    (ParseResponseInputTokensRequest) rendered as /v1/responses renders them (previous_response_id from the caller's
//    stored responses) -> {"object": "response.input_tokens", "input_tokens": N}, that request's usage.input_tokens.
// `model`, when given, must be one the server serves. Admitted as every API call is (keys, rpm); errors in
// OpenAI's shape naming the field.
#pragma once

#include <httplib.h>

#include "server/service_context.h"

namespace arach::server::http {

void HandleTokenize(ServiceContext& context, const httplib::Request& request, httplib::Response& response);
void HandleDetokenize(ServiceContext& context, const httplib::Request& request, httplib::Response& response);
void HandleResponseInputTokens(ServiceContext& context, const httplib::Request& request, httplib::Response& response);

}  // namespace arach::server::http
