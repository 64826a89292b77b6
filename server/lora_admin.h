// Loading and unloading LoRA adapters while serving (--allow_runtime_lora_updating), for both APIs: HTTP's vLLM
// routes (server/http/lora_admin.h) and gRPC's LoadLoraAdapter / UnloadLoraAdapter. One set of rules: NOT_FOUND
// without the flag, PERMISSION_DENIED for a key without the scope `adapters` (the path is read on the server's file
// system), INVALID_ARGUMENT naming the field for an empty name or path, a name with ':' (NAME:VARIANT names a
// variant) or ',' (--lora_modules' lists) or the served model's name; then Engine::LoadLora / UnloadLora, and a line
// in the server's log.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/engine.h"
#include "server/caller.h"
#include "server/service_context.h"

namespace arach::server {

struct LoraAdminRequest {
  std::string lora_name;
  std::string lora_path;      // load only
  bool load_inplace = false;  // load only: the new weights take the name where it is loaded (Engine::LoadLora's replace)
};

// Whether adapters change at run time on this server (the flag: NOT_FOUND otherwise, before any key is checked).
absl::Status CheckLoraAdminEnabled(const ServiceContext& context);
// Whether `caller` may load and unload adapters on this server (the flag, then the scope).
absl::Status CheckLoraAdminAllowed(const ServiceContext& context, const Caller& caller);

// OK where `request` may be applied (`load`: a load, else an unload) on a server serving `served_model_name`; else
// INVALID_ARGUMENT naming the field.
absl::Status CheckLoraAdminRequest(const LoraAdminRequest& request, bool load, absl::string_view served_model_name);

// Checks `request` (CheckLoraAdminRequest) and loads (`load`) or unloads its adapter on `engine`; logs what changed.
absl::Status ApplyLoraAdmin(const ServiceContext& context, Engine& engine, const Caller& caller, const LoraAdminRequest& request,
                            bool load);

}  // namespace arach::server
