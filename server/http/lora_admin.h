// vLLM's routes for LoRA adapters at run time, on with --allow_runtime_lora_updating (else 404 saying so):
//   POST /v1/load_lora_adapter   {"lora_name": NAME, "lora_path": PEFT folder on the server,
//                                 "load_inplace": replace the adapter of that name (default false)}  -> Engine::LoadLora
//   POST /v1/unload_lora_adapter {"lora_name": NAME}                                          -> Engine::UnloadLora
// A key with the scope `adapters` where keys are configured (the path is read on the server's file system). 200
// with vLLM's plain-text answer; errors as the API's (400 naming the parameter, 403, 404 for an unknown adapter).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "httplib.h"
#include "server/lora_admin.h"
#include "server/service_context.h"

namespace arach::server::http {

// Reads a load (`load`) or unload body into a request (CheckLoraAdminRequest checks its values): INVALID_ARGUMENT
// naming the parameter for a body that is no JSON object, a name or path that is no string, `load_inplace` other
// than true or false, or an unknown parameter.
absl::StatusOr<LoraAdminRequest> ParseLoraAdminRequest(absl::string_view body, bool load);

void ServeLoraAdminRoutes(httplib::Server& server, ServiceContext& context);

}  // namespace arach::server::http
