#include "server/server_options.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "server/chat_output/chat_output_format.h"

namespace arach::server {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", what));
}

// An origin as a browser sends it: http(s)://host[:port], nothing after.
bool IsOrigin(const std::string& origin) {
  size_t host_start;
  if (absl::StartsWithIgnoreCase(origin, "https://")) {
    host_start = 8;
  } else if (absl::StartsWithIgnoreCase(origin, "http://")) {
    host_start = 7;
  } else {
    return false;
  }
  return origin.size() > host_start && origin.find_first_of("/?#@ \t", host_start) == std::string::npos;
}

}  // namespace

absl::StatusOr<ServerConfig> ResolveServerConfig(const ServerOptions& options) {
  ServerConfig config;
  config.options = options;
  if (options.model_dir.empty()) return FlagError("model", "a model folder is required");
  if (config.options.served_model_name.empty()) {
    std::string folder = options.model_dir;
    while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
    config.options.served_model_name = folder.substr(folder.rfind('/') + 1);
  }
  if (config.options.served_model_name.find(':') != std::string::npos) {
    return FlagError("served_model_name", "must not contain ':' (NAME:VARIANT names a variant)");
  }
  ARACH_RETURN_IF_ERROR(ParseStorageDTypeFlags(options.weight_dtype, options.kv_cache_dtype, config.options.load));
  ARACH_RETURN_IF_ERROR(ParseLoraModulesFlag(options.lora_modules, config.options.load));
  if (options.max_loras < 1) return FlagError("max_loras", "must be 1 or more");
  if (options.max_lora_rank < 1) return FlagError("max_lora_rank", "must be 1 or more");
  if (options.max_cpu_loras != 0 && options.max_cpu_loras < options.max_loras) {
    return FlagError("max_cpu_loras", absl::StrCat("must be 0 (--max_loras) or at least --max_loras ", options.max_loras));
  }
  config.options.load.lora_limits =
      LoraLimits{.max_loras = options.max_loras, .max_cpu_loras = options.max_cpu_loras, .max_rank = options.max_lora_rank};
  ARACH_RETURN_IF_ERROR(CheckLoraModuleCount(config.options.load));
  config.options.load.lora_runtime_loading = options.allow_runtime_lora_updating;
  for (const LoraModule& lora : config.options.load.lora_modules) {
    if (lora.name == config.options.served_model_name) {
      return FlagError("lora_modules", absl::StrCat("the adapter name '", lora.name, "' is the served model's name"));
    }
  }
  if (!(options.http.request_timeout_seconds > 0) || options.http.request_timeout_seconds > 86400) {
    return FlagError("http_request_timeout_seconds", "must be above 0 and at most a day (86400)");
  }
  if (options.load.max_model_len < 0) return FlagError("max_model_len", "must be 0 (the model's context) or more");
  if (options.http.threads < 0) return FlagError("http_threads", "must be 0 (as many as the engine can hold) or more");
  if (options.http.threads == 0) {
    // Every request the engine may hold (running or queued) can be a stream holding a connection, and a few more
    // connections for the rest (models, health, metrics): beyond that the engine's queue answers 429, not HTTP.
    config.options.http.threads = options.engine.max_num_seqs + options.engine.max_queued_requests + 64;
  }
  absl::StatusOr<DeviceKind> device = ParseDeviceKind(options.device);
  if (!device.ok()) return FlagError("device", device.status().message());
  config.device = *device;
  config.options.load.device = *device;

  absl::StatusOr<Variant> variant = ParseVariantName(options.default_variant);
  if (!variant.ok()) return FlagError("default_variant", variant.status().message());
  if (!std::isfinite(options.arach_offset)) return FlagError("arach_offset", "must be a finite number");
  variant->arach_offset = static_cast<float>(options.arach_offset);
  const bool has_adapter = !options.load.adapter.empty();
  if (absl::Status s = variant->Validate(has_adapter); !s.ok()) return FlagError("default_variant", s.message());
  config.default_variant = *variant;

  if (!options.experiment.empty() && !options.experiment_file.empty()) {
    return FlagError("experiment", "give --experiment or --experiment_file, not both");
  }
  if (!options.experiment.empty() || !options.experiment_file.empty()) {
    ARACH_ASSIGN_OR_RETURN(Experiment experiment, options.experiment.empty()
                                                      ? LoadExperimentFile(options.experiment_file, variant->arach_offset)
                                                      : ParseExperimentSplit(options.experiment, variant->arach_offset));
    for (const ExperimentArm& arm : experiment.arms) {
      if (absl::Status s = arm.variant.Validate(has_adapter); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("experiment arm \"", arm.name, "\": ", s.message()));
      }
    }
    config.experiment = std::move(experiment);
  }
  if (!(options.diagnostics_sample_rate >= 0.0 && options.diagnostics_sample_rate <= 1.0)) {
    return FlagError("diagnostics_sample_rate", "must be between 0 and 1");
  }
  if (!(options.shadow_rate >= 0.0 && options.shadow_rate <= 1.0)) return FlagError("shadow_rate", "must be between 0 and 1");
  if (options.shadow_max_in_flight < 1) return FlagError("shadow_max_in_flight", "must be at least 1");
  if (options.drain_grace_seconds < 0) return FlagError("drain_grace_seconds", "must not be negative");
  if (options.drain_announce_ms < 0) return FlagError("drain_announce_ms", "must not be negative");
  if (options.responses_store_bytes < 0) return FlagError("responses_store_bytes", "must not be negative");
  // A router reads the name back between the id's first two underscores (resp_NAME_...).
  if (options.replica_name.size() > 63 ||
      options.replica_name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != std::string::npos) {
    return FlagError("replica_name", "must be at most 63 letters, digits, '-' and '.'");
  }
  for (const std::string& origin : options.http.cors_allowed_origins) {
    if (origin != "*" && !IsOrigin(origin)) {
      return FlagError("cors_allowed_origins", absl::StrCat("'", origin, "' is neither an origin (http(s)://host[:port], no path) nor *"));
    }
  }
  if (options.engine.unhealthy_after_failed_steps < 0) return FlagError("unhealthy_after_failed_steps", "must not be negative (0: never)");
  if (options.engine.stall_timeout.count() < 0) return FlagError("engine_stall_seconds", "must not be negative (0: never)");
  if (!options.shadow_variant.empty()) {
    absl::StatusOr<Variant> shadow = ParseVariantName(options.shadow_variant);
    if (!shadow.ok()) return FlagError("shadow_variant", shadow.status().message());
    if (options.shadow_variant.find('@') == std::string::npos) shadow->arach_offset = static_cast<float>(options.arach_offset);
    if (absl::Status s = shadow->Validate(has_adapter); !s.ok()) return FlagError("shadow_variant", s.message());
    config.shadow_variant = *shadow;
  }
  for (const auto& [tls, prefix] : {std::pair<const TlsOptions&, std::string>{options.grpc.tls, "tls"},
                                    std::pair<const TlsOptions&, std::string>{options.http.tls, "http_tls"}}) {
    if (tls.cert.empty() != tls.key.empty()) {
      return FlagError(prefix + "_cert", absl::StrCat("--", prefix, "_cert and --", prefix, "_key go together"));
    }
    if (!tls.client_ca.empty() && tls.cert.empty()) {
      return FlagError(prefix + "_client_ca", absl::StrCat("needs --", prefix, "_cert and --", prefix, "_key"));
    }
  }
  if (options.grpc.tls_reload_seconds < 1) return FlagError("tls_reload_seconds", "must be at least 1");
  if (!(options.engine.priority_aging_seconds >= 0)) return FlagError("priority_aging_seconds", "must be 0 (off) or more");
  if (options.limits.max_prompts_per_request < 1) return FlagError("max_prompts_per_request", "must be at least 1");
  ARACH_RETURN_IF_ERROR(ResolveChatOutputFormat("", options.tool_call_parser, options.reasoning_parser).status());
  return config;
}

}  // namespace arach::server
