#include "server/http/structured_output_request.h"

#include "absl/strings/str_cat.h"
#include "engine/core/field_error.h"
#include "engine/core/status.h"
#include "server/json_body.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

// `schema` as JSON text: an object is written out, a string is taken as the schema's JSON text.
absl::StatusOr<std::string> SchemaText(const json& schema, const std::string& field) {
  if (schema.is_object() || schema.is_boolean()) return schema.dump();
  if (schema.is_string()) {
    // Its text is checked as a body is (json_body.h): nested thousands of levels deep, it would exhaust the
    // stack of xgrammar's recursive parser (a request took the server down).
    ARACH_ASSIGN_OR_RETURN(const json parsed, ParseJson(schema.get<std::string>(), field));
    if (!(parsed.is_object() || parsed.is_boolean())) return InvalidField(field, "must be a JSON Schema (an object, or its JSON text)");
    return schema.get<std::string>();
  }
  return InvalidField(field, "must be a JSON Schema (an object, or its JSON text)");
}

// A json_schema format's fields (`name`, `description`, `strict`, `schema`) in `spec`, named under `field`;
// `type_key`: the spec is the format object itself and carries its `type` (the Responses API's flat shape).
absl::StatusOr<RequestedConstraint> ParseJsonSchemaSpec(const json& spec, const std::string& field, bool type_key) {
  bool strict = false;  // OpenAI's default
  for (const auto& [key, value] : spec.items()) {
    const std::string at = absl::StrCat(field, ".", key);
    if (key == "name") {
      if (!value.is_string() || value.get<std::string>().empty() || value.get<std::string>().size() > 64) {
        return InvalidField(at, "must be a name of 1 to 64 characters");
      }
    } else if (key == "description") {
      if (!value.is_string()) return InvalidField(at, "must be a string");
    } else if (key == "strict") {
      if (!value.is_null() && !value.is_boolean()) return InvalidField(at, "must be true or false");
      strict = value.is_boolean() && value.get<bool>();
    } else if (key != "schema" && !(type_key && key == "type")) {
      return KeyError(field, key, "is not a known parameter");
    }
  }
  if (!spec.contains("name")) return InvalidField(field + ".name", "is required");
  const auto schema = spec.find("schema");
  if (schema == spec.end() || schema->is_null()) return InvalidField(field + ".schema", "is required");
  ARACH_ASSIGN_OR_RETURN(std::string text, SchemaText(*schema, field + ".schema"));
  return RequestedConstraint{OutputConstraint::JsonSchema(std::move(text), strict), field + ".schema"};
}

absl::StatusOr<RequestedConstraint> ParseResponseFormat(const json& format) {
  if (!format.is_object()) return InvalidField("response_format", "must be an object with a type");
  const auto type = format.find("type");
  if (type == format.end() || !type->is_string()) {
    return InvalidField("response_format.type", "is required: text, json_object or json_schema");
  }
  for (const auto& [key, value] : format.items()) {
    if (key != "type" && key != "json_schema") return KeyError("response_format", key, "is not a known parameter");
  }
  const std::string kind = type->get<std::string>();
  if (kind == "text") return RequestedConstraint{};
  if (kind == "json_object") return RequestedConstraint{OutputConstraint::JsonObject(), "response_format"};
  if (kind != "json_schema") {
    return InvalidField("response_format.type", absl::StrCat("'", kind, "' is not text, json_object or json_schema"));
  }
  const auto spec = format.find("json_schema");
  if (spec == format.end() || !spec->is_object()) return InvalidField("response_format.json_schema", "is required (an object)");
  return ParseJsonSchemaSpec(*spec, "response_format.json_schema", /*type_key=*/false);
}

absl::StatusOr<RequestedConstraint> ParseStructuredOutputs(const json& spec) {
  if (!spec.is_object()) return InvalidField("structured_outputs", "must be an object with one of json, regex, choice, grammar, json_object");
  std::optional<RequestedConstraint> found;
  for (const auto& [key, value] : spec.items()) {
    if (value.is_null()) continue;
    const std::string field = absl::StrCat("structured_outputs.", key);
    RequestedConstraint c;
    c.field = field;
    if (key == "json") {
      ARACH_ASSIGN_OR_RETURN(std::string text, SchemaText(value, field));
      c.constraint = OutputConstraint::JsonSchema(std::move(text));
    } else if (key == "regex" || key == "grammar") {
      if (!value.is_string() || value.get<std::string>().empty()) return InvalidField(field, "must be a non-empty string");
      c.constraint = key == "regex" ? OutputConstraint::Regex(value.get<std::string>()) : OutputConstraint::Grammar(value.get<std::string>());
    } else if (key == "choice") {
      if (!value.is_array() || value.empty()) return InvalidField(field, "must be a non-empty list of strings");
      std::vector<std::string> choices;
      for (size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_string()) return InvalidField(absl::StrCat(field, "[", i, "]"), "must be a string");
        choices.push_back(value[i].get<std::string>());
      }
      c.constraint = OutputConstraint::Choice(std::move(choices));
    } else if (key == "json_object") {
      if (!value.is_boolean()) return InvalidField(field, "must be true or false");
      if (!value.get<bool>()) continue;
      c.constraint = OutputConstraint::JsonObject();
    } else {
      return KeyError("structured_outputs", key, "is not supported (give one of json, regex, choice, grammar, json_object)");
    }
    if (found) return InvalidField(field, absl::StrCat("give one constraint only (", found->field, " is given too)"));
    found = std::move(c);
  }
  if (!found) return InvalidField("structured_outputs", "give one of json, regex, choice, grammar, json_object");
  return *found;
}

}  // namespace

absl::StatusOr<RequestedConstraint> ParseStructuredOutput(const json& body) {
  RequestedConstraint from_format, from_outputs;
  if (const auto format = body.find("response_format"); format != body.end() && !format->is_null()) {
    ARACH_ASSIGN_OR_RETURN(from_format, ParseResponseFormat(*format));
  }
  if (const auto outputs = body.find("structured_outputs"); outputs != body.end() && !outputs->is_null()) {
    ARACH_ASSIGN_OR_RETURN(from_outputs, ParseStructuredOutputs(*outputs));
  }
  if (from_format.constraint.active() && from_outputs.constraint.active()) {
    return InvalidField("structured_outputs", "give either response_format or structured_outputs, not both");
  }
  return from_format.constraint.active() ? from_format : from_outputs;
}

absl::StatusOr<RequestedConstraint> ParseTextFormat(const json& format, const std::string& field) {
  if (format.is_null()) return RequestedConstraint{};
  if (!format.is_object()) return InvalidField(field, "must be an object with a type");
  const auto type = format.find("type");
  if (type == format.end() || !type->is_string()) return InvalidField(field + ".type", "is required: text, json_object or json_schema");
  const std::string kind = type->get<std::string>();
  if (kind == "text" || kind == "json_object") {
    for (const auto& [key, value] : format.items()) {
      if (key != "type") return KeyError(field, key, "is not a known parameter");
    }
    return kind == "text" ? RequestedConstraint{} : RequestedConstraint{OutputConstraint::JsonObject(), field};
  }
  if (kind != "json_schema") return InvalidField(field + ".type", absl::StrCat("'", kind, "' is not text, json_object or json_schema"));
  return ParseJsonSchemaSpec(format, field, /*type_key=*/true);
}

}  // namespace arach::server::http
