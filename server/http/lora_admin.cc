#include "server/http/lora_admin.h"

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/caller.h"
#include "server/http/http_call.h"
#include "server/json_body.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

absl::StatusOr<std::string> StringAt(const json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::string();  // (CheckLoraAdminRequest names what is required)
  if (!it->is_string()) return absl::InvalidArgumentError(absl::StrCat(key, ": must be a string"));
  return it->get<std::string>();
}

// One route: the flag and the key's scope, the body, then the change on the engine.
void Serve(const httplib::Request& request, httplib::Response& response, ServiceContext& context, bool load) {
  if (absl::Status enabled = CheckLoraAdminEnabled(context); !enabled.ok()) return SendError(response, enabled);
  absl::StatusOr<Caller> caller = Authenticate(*context.keys, request.get_header_value("Authorization"));
  if (!caller.ok()) return SendError(response, caller.status());
  if (absl::Status allowed = CheckLoraAdminAllowed(context, *caller); !allowed.ok()) return SendError(response, allowed);
  absl::StatusOr<LoraAdminRequest> parsed = ParseLoraAdminRequest(request.body, load);
  if (!parsed.ok()) return SendError(response, parsed.status());
  Engine* engine = context.engine.load();
  if (engine == nullptr || context.state.phase() != Phase::kServing) {
    return SendError(response, absl::UnavailableError("the server is not serving (loading or draining)"));
  }
  if (absl::Status done = ApplyLoraAdmin(context, *engine, *caller, *parsed, load); !done.ok()) return SendError(response, done);
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
  ARACH_ASSIGN_OR_RETURN(request.lora_name, StringAt(root, "lora_name"));
  if (!load) return request;
  ARACH_ASSIGN_OR_RETURN(request.lora_path, StringAt(root, "lora_path"));
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
