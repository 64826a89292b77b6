#include "server/http/http_call.h"

#include <chrono>

#include "engine/core/status.h"
#include "server/http/model_ids.h"
#include "server/http/openai_error.h"
#include "server/request_log.h"

namespace arach::server::http {

std::string RequestIdOf(const httplib::Request& request) {
  const std::string given = request.get_header_value(kRequestIdHeader);
  bool usable = !given.empty() && given.size() <= 128;
  for (char c : given) usable = usable && c > 0x20 && c < 0x7f;
  return usable ? given : NewRequestId();
}

void SendJson(httplib::Response& response, int http_status, const nlohmann::json& body) {
  response.status = http_status;
  response.set_content(JsonText(body), "application/json");
}

void SendError(httplib::Response& response, const absl::Status& status) {
  const int http_status = HttpStatusOf(status);
  if (http_status == 429) response.set_header("Retry-After", "1");
  SendJson(response, http_status, ErrorBody(status));
}

absl::StatusOr<ResolvedVariant> ResolveVariant(ServiceContext& context, const GenerationFields& fields) {
  const Engine* engine = context.engine.load();
  ARACH_ASSIGN_OR_RETURN(RequestedVariant requested,
                         VariantOfModelId(fields.model, context.served_model_name, engine != nullptr && engine->has_adapter()));
  if (fields.variant.arach) requested.arach = fields.variant.arach;
  if (fields.variant.arach_offset) requested.arach_offset = fields.variant.arach_offset;
  if (fields.variant.skip) requested.skip = fields.variant.skip;
  requested.experiment_key = fields.variant.experiment_key;
  ResolvedVariant resolved = context.variants->Resolve(requested);
  if (!resolved.arm.empty()) context.metrics->RecordAssignment(resolved.arm, resolved.variant);
  return resolved;
}

void SetVariantHeaders(httplib::Response& response, const ResolvedVariant& variant) {
  response.set_header(kVariantHeader, variant.variant.Name());
  if (!variant.arm.empty()) response.set_header(kExperimentArmHeader, variant.arm);
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace arach::server::http
