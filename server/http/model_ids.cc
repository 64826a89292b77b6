#include "server/http/model_ids.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/engine.h"

namespace arach::server::http {
namespace {

struct NamedVariant {
  const char* suffix;
  bool arach;
  bool skip;
};
constexpr NamedVariant kVariants[] = {{"base", false, false}, {"arach", true, false}, {"skip", false, true}, {"arach+skip", true, true}};

// Whether `id` is NAME:SUFFIX for `name` (some suffix).
bool HasSuffixOf(const std::string& id, const std::string& name) {
  return id.size() > name.size() && id.compare(0, name.size(), name) == 0 && id[name.size()] == ':';
}

// The base model's name, then each LoRA's: the names an id may start with.
std::vector<std::string> ModelNames(const ServedModels& served) {
  std::vector<std::string> names = {served.name};
  names.insert(names.end(), served.loras.begin(), served.loras.end());
  return names;
}

}  // namespace

ServedModels ServedModelsOf(const std::string& served_name, const Engine& engine) {
  return ServedModels{served_name, engine.has_adapter(), engine.lora_names()};
}

std::vector<std::string> ServedModelIds(const ServedModels& served) {
  std::vector<std::string> ids;
  for (const std::string& name : ModelNames(served)) {
    ids.push_back(name);
    for (const NamedVariant& v : kVariants) {
      if (!v.skip || served.has_adapter) ids.push_back(absl::StrCat(name, ":", v.suffix));
    }
  }
  return ids;
}

absl::Status ModelNotServed(const std::string& model, const ServedModels& served) {
  return absl::NotFoundError(absl::StrCat("model: '", model, "' is not served here; GET /v1/models lists ",
                                          absl::StrJoin(ServedModelIds(served), ", ")));
}

std::string LoraOfModelId(const std::string& model, const ServedModels& served) {
  for (const std::string& lora : served.loras) {
    if (model == lora || HasSuffixOf(model, lora)) return lora;
  }
  return "";
}

absl::StatusOr<RequestedVariant> VariantOfModelId(const std::string& model, const ServedModels& served) {
  RequestedVariant spec;
  for (const std::string& name : ModelNames(served)) {
    const bool is_lora = name != served.name;
    if (model == name) {
      if (is_lora) spec.lora = name;
      return spec;
    }
    if (!HasSuffixOf(model, name)) continue;
    const std::string suffix = model.substr(name.size() + 1);
    for (const NamedVariant& v : kVariants) {
      if (suffix != v.suffix) continue;
      if (v.skip && !served.has_adapter) {
        return absl::InvalidArgumentError(
            absl::StrCat("model: the variant '", suffix, "' needs the skip adapter, which this server was not started with"));
      }
      spec.arach = v.arach;
      spec.skip = v.skip;
      if (is_lora) spec.lora = name;
      return spec;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("model: unknown variant suffix '", suffix, "' (base, arach, skip or arach+skip)"));
  }
  return ModelNotServed(model, served);
}

}  // namespace arach::server::http
