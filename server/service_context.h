// What the handlers of both APIs share: the engine (once loaded), metrics, the variant resolver, limits, the
// API keys and their rate limits, and the serving state. Owned by serve.cc; the handlers hold a reference.
#pragma once

#include <atomic>

#include "engine/engine.h"
#include "server/api_keys.h"
#include "server/chat_output/chat_output_format.h"
#include "server/metrics.h"
#include "server/rate_limits.h"
#include "server/request_log.h"
#include "server/request_limits.h"
#include "server/request_policy.h"
#include "server/response_store.h"
#include "server/shadow_scorer.h"
#include "server/serving_state.h"
#include "server/variant_resolver.h"

namespace arach::server {

struct ServiceContext {
  std::atomic<Engine*> engine{nullptr};  // null while loading
  ServerMetrics* metrics = nullptr;
  const VariantResolver* variants = nullptr;
  RequestLimits limits;
  ServingState state;
  std::string device;  // for GetModelInfo
  std::string served_model_name;   // the model's name in both APIs (--served_model_name)
  int64_t started_unix_seconds = 0;
  RequestLog* request_log = nullptr;  // one line per finished request
  RequestPolicy* policy = nullptr;  // what the server adds to every generation request (both APIs)
  ShadowScorer* shadow = nullptr;   // paired shadow scoring of finished generation requests
  const ApiKeys* keys = nullptr;    // who may call (never null: an open server has an empty set)
  RateLimiter* rate_limiter = nullptr;  // the keys' requests and tokens per minute
  // --prefix_cache_per_key: each API key's requests find only the prefix-cache blocks of that key's requests
  // (CallTicket::CacheSaltFor), so that no tenant learns another's prompts from prefix-cache timing.
  bool prefix_cache_per_key = false;
  bool metrics_need_key = false;    // --metrics_auth: /metrics wants a valid key too (where keys are configured)
  ChatOutputFormat chat_output;     // how the model's chat turns write tool calls and reasoning (set before the engine)
  ResponseStore* responses = nullptr;  // the Responses API's stored answers (--responses_store_bytes); null: none kept
  std::string replica_name;            // this replica's name in a fleet (--replica_name), in its responses' ids; empty: none
  bool exclude_tools_when_tool_choice_none = false;  // --exclude_tools_when_tool_choice_none: such a turn's prompt has no tools
  bool trust_request_chat_template = false;          // --trust_request_chat_template: chat requests may bring their own template
  bool allow_runtime_lora_updating = false;          // --allow_runtime_lora_updating: /v1/load_lora_adapter and /v1/unload_lora_adapter
};

}  // namespace arach::server
