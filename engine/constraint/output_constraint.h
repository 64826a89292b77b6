// What a request may ask its output to match (structured output): a JSON Schema, any JSON object, a regular
// expression, one of a list of strings, an EBNF grammar, or an xgrammar structural tag (tool calls). Plain data,
// the request vocabulary of both APIs; compiling and enforcing it is constraint_compiler.h.
#pragma once

#include <string>
#include <vector>

namespace arach {

struct OutputConstraint {
  enum class Kind {
    kNone,
    kJsonObject,     // any JSON object
    kJsonSchema,     // `text`: the schema (JSON)
    kRegex,          // `text`: the regular expression
    kChoice,         // `choices`: the output is exactly one of them
    kGrammar,        // `text`: EBNF (GBNF-style, root rule `root`)
    kStructuralTag,  // `text`: an xgrammar structural tag (JSON): e.g. tool calls in a model's format
  };
  Kind kind = Kind::kNone;
  std::string text;
  std::vector<std::string> choices;
  // JSON Schema: unless strict, properties the schema does not name may be added (OpenAI's `strict: false`).
  bool strict = true;

  static OutputConstraint JsonObject() { return {Kind::kJsonObject, "", {}, true}; }
  static OutputConstraint JsonSchema(std::string schema, bool strict = true) { return {Kind::kJsonSchema, std::move(schema), {}, strict}; }
  static OutputConstraint Regex(std::string regex) { return {Kind::kRegex, std::move(regex), {}, true}; }
  static OutputConstraint Choice(std::vector<std::string> choices) { return {Kind::kChoice, "", std::move(choices), true}; }
  static OutputConstraint Grammar(std::string ebnf) { return {Kind::kGrammar, std::move(ebnf), {}, true}; }
  static OutputConstraint StructuralTag(std::string tag) { return {Kind::kStructuralTag, std::move(tag), {}, true}; }

  bool active() const { return kind != Kind::kNone; }
  // "json_schema", "regex", ... (errors, logs and metrics).
  const char* KindName() const;
};

}  // namespace arach
