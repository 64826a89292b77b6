#include "server/lora_admin.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"

namespace arach::server {

absl::Status CheckLoraAdminEnabled(const ServiceContext& context) {
  if (context.allow_runtime_lora_updating) return absl::OkStatus();
  return absl::NotFoundError("LoRA adapters are not loaded or unloaded at run time here (start the server "
                             "with --allow_runtime_lora_updating)");
}

absl::Status CheckLoraAdminAllowed(const ServiceContext& context, const Caller& caller) {
  ARACH_RETURN_IF_ERROR(CheckLoraAdminEnabled(context));
  return RequireScope(caller, kScopeAdapters, "lora_name");
}

absl::Status CheckLoraAdminRequest(const LoraAdminRequest& request, bool load, absl::string_view served_model_name) {
  if (absl::Status name = CheckLoraName(request.lora_name); !name.ok()) return InvalidField("lora_name", name.message());
  if (request.lora_name == served_model_name) return InvalidField("lora_name", "is the served model's name");
  if (load && request.lora_path.empty()) return InvalidField("lora_path", "required (a non-empty string)");
  return absl::OkStatus();
}

absl::Status ApplyLoraAdmin(const ServiceContext& context, Engine& engine, const Caller& caller, const LoraAdminRequest& request,
                            bool load) {
  ARACH_RETURN_IF_ERROR(CheckLoraAdminRequest(request, load, context.served_model_name));
  ARACH_RETURN_IF_ERROR(load ? engine.LoadLora(request.lora_name, request.lora_path, request.load_inplace)
                             : engine.UnloadLora(request.lora_name));
  const std::string what =
      load ? absl::StrCat(request.load_inplace ? "loaded in place from " : "loaded from ", request.lora_path) : "unloaded";
  std::printf("arach-server LoRA adapter '%s' %s (key %s)\n", request.lora_name.c_str(), what.c_str(), caller.key.c_str());
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace arach::server
