#include "server/http/lora_admin.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/caller.h"
#include "server/http/http_call.h"
#include "server/json_body.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

absl::StatusOr<std::string> NonEmptyString(const json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return absl::InvalidArgumentError(absl::StrCat(key, ": required"));
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": must be a non-empty string"));
  }
  return it->get<std::string>();
}

// One route: the flag, the key's scope, the body, then `act` on the engine.
void Serve(const httplib::Request& request, httplib::Response& response, ServiceContext& context, bool load) {
  if (!context.allow_runtime_lora_updating) {
    return SendError(response, absl::NotFoundError("LoRA adapters are not loaded or unloaded at run time here (start the server "
                                                   "with --allow_runtime_lora_updating)"));
  }
  absl::StatusOr<Caller> caller = Authenticate(*context.keys, request.get_header_value("Authorization"));
  if (!caller.ok()) return SendError(response, caller.status());
  if (absl::Status allowed = RequireScope(*caller, kScopeAdapters, "lora_name"); !allowed.ok()) return SendError(response, allowed);
  absl::StatusOr<LoraAdminRequest> parsed = ParseLoraAdminRequest(request.body, load);
  if (!parsed.ok()) return SendError(response, parsed.status());
  Engine* engine = context.engine.load();
  if (engine == nullptr || context.state.phase() != Phase::kServing) {
    return SendError(response, absl::UnavailableError("the server is not serving (loading or draining)"));
  }
  if (parsed->lora_name == context.served_model_name) {
    return SendError(response, absl::InvalidArgumentError("lora_name: is the served model's name"));
  }
  const absl::Status done =
      load ? engine->LoadLora(parsed->lora_name, parsed->lora_path, parsed->load_inplace) : engine->UnloadLora(parsed->lora_name);
  if (!done.ok()) return SendError(response, done);
  const std::string what = load ? absl::StrCat(parsed->load_inplace ? "loaded in place from " : "loaded from ", parsed->lora_path) : "unloaded";
  std::printf("arach-server LoRA adapter '%s' %s (key %s)\n", parsed->lora_name.c_str(), what.c_str(), caller->key.c_str());
  std::fflush(stdout);
  response.status = 200;
  response.set_content(absl::StrCat("Success: LoRA adapter '", parsed->lora_name, "' ", load ? "added" : "removed", " successfully."),
                       "text/plain; charset=utf-8");
}

}  // namespace

absl::StatusOr<LoraAdminRequest> ParseLoraAdminRequest(absl::string_view body, bool load) {
  ARACH_ASSIGN_OR_RETURN(const json root, ParseJson(body, "body"));
  if (!root.is_object()) return absl::InvalidArgumentError("body: must be a JSON object");
  for (const auto& [key, value] : root.items()) {
    const bool known = key == "lora_name" || (load && (key == "lora_path" || key == "load_inplace"));
    if (!known) return KeyError("", key, "is not a parameter of this route");
  }
  LoraAdminRequest request;
  ARACH_ASSIGN_OR_RETURN(request.lora_name, NonEmptyString(root, "lora_name"));
  if (request.lora_name.find_first_of(":,") != std::string::npos) {
    return absl::InvalidArgumentError("lora_name: must not contain ':' (NAME:VARIANT names a variant) or ','");
  }
  if (!load) return request;
  ARACH_ASSIGN_OR_RETURN(request.lora_path, NonEmptyString(root, "lora_path"));
  ARACH_ASSIGN_OR_RETURN(const std::optional<bool> inplace, OptionalBoolAt(root, "load_inplace"));
  request.load_inplace = inplace.value_or(false);
  return request;
}

void ServeLoraAdminRoutes(httplib::Server& server, ServiceContext& context) {
  server.Post("/v1/load_lora_adapter", [&context](const httplib::Request& request, httplib::Response& response) {
    Serve(request, response, context, /*load=*/true);
  });
  server.Post("/v1/unload_lora_adapter", [&context](const httplib::Request& request, httplib::Response& response) {
    Serve(request, response, context, /*load=*/false);
  });
}

}  // namespace arach::server::http
