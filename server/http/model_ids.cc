#include "server/http/model_ids.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace arach::server::http {
namespace {

struct NamedVariant {
  const char* suffix;
  bool arach;
  bool skip;
};
constexpr NamedVariant kVariants[] = {{"base", false, false}, {"arach", true, false}, {"skip", false, true}, {"arach+skip", true, true}};

}  // namespace

std::vector<std::string> ServedModelIds(const std::string& served_name, bool has_adapter) {
  std::vector<std::string> ids = {served_name};
  for (const NamedVariant& v : kVariants) {
    if (!v.skip || has_adapter) ids.push_back(absl::StrCat(served_name, ":", v.suffix));
  }
  return ids;
}

absl::Status ModelNotServed(const std::string& model, const std::string& served_name, bool has_adapter) {
  return absl::NotFoundError(absl::StrCat("model: '", model, "' is not served here; GET /v1/models lists ",
                                          absl::StrJoin(ServedModelIds(served_name, has_adapter), ", ")));
}

absl::StatusOr<RequestedVariant> VariantOfModelId(const std::string& model, const std::string& served_name,
                                                  bool has_adapter) {
  RequestedVariant spec;
  if (model == served_name) return spec;
  const bool named_here = model.size() > served_name.size() && model.compare(0, served_name.size(), served_name) == 0 &&
                          model[served_name.size()] == ':';
  if (!named_here) return ModelNotServed(model, served_name, has_adapter);
  const std::string suffix = model.substr(served_name.size() + 1);
  for (const NamedVariant& v : kVariants) {
    if (suffix != v.suffix) continue;
    if (v.skip && !has_adapter) {
      return absl::InvalidArgumentError(
          absl::StrCat("model: the variant '", suffix, "' needs the skip adapter, which this server was not started with"));
    }
    spec.arach = v.arach;
    spec.skip = v.skip;
    return spec;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("model: unknown variant suffix '", suffix, "' (base, arach, skip or arach+skip)"));
}

}  // namespace arach::server::http
