// The model ids the HTTP API serves: NAME (the server decides the variant: its default or its A/B
// experiment) and NAME:VARIANT for each variant the server can run (base, arach, and with an adapter
// skip and arach+skip); then the same for each LoRA adapter (--lora_modules): LORA and LORA:VARIANT.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/variant_resolver.h"

namespace arach {
class Engine;
}

namespace arach::server::http {

// What the ids are made of.
struct ServedModels {
  std::string name;                // --served_model_name
  bool has_adapter = false;        // the skip variants exist
  std::vector<std::string> loras;  // the LoRA adapters' names
};
ServedModels ServedModelsOf(const std::string& served_name, const Engine& engine);

// Every id GET /v1/models lists, NAME first, each LoRA's after the base model's.
std::vector<std::string> ServedModelIds(const ServedModels& served);

// NOT_FOUND (param "model"): `model` is not one of ServedModelIds, which the message lists.
absl::Status ModelNotServed(const std::string& model, const ServedModels& served);

// The LoRA adapter a served id names ("" for the base model's ids).
std::string LoraOfModelId(const std::string& model, const ServedModels& served);

// The variant a `model` field asks for: nothing set for NAME (or a LoRA's name, which sets `lora`); NOT_FOUND
// (param "model") for another name; INVALID_ARGUMENT (param "model") for an unknown suffix or a skip variant
// without an adapter.
absl::StatusOr<RequestedVariant> VariantOfModelId(const std::string& model, const ServedModels& served);

}  // namespace arach::server::http
