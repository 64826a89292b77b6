// Reads one component object of a tokenizer.json ({"type": "Split", "pattern": ..., ...}): typed fields
// with defaults, and errors that name the file, the component's place in the file and the key. Every key
// must be read (or explicitly ignored): an option this engine does not implement is an error at load time,
// never a silently different tokenization.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "engine/tokenizer/regex.h"
#include "nlohmann/json.hpp"

namespace arach {

class JsonComponent {
 public:
  // `where` names the component, e.g. "tokenizer.json: pre_tokenizer.pretokenizers[0]".
  JsonComponent(const nlohmann::json& object, std::string where) : object_(object), where_(std::move(where)) {}

  // INVALID_ARGUMENT "<where>: <what>".
  absl::Status Error(absl::string_view what) const;
  // The "type" field (required, a string).
  absl::StatusOr<std::string> Type();
  // The field `key` (nullptr when absent or null); marks it as read.
  const nlohmann::json* Get(const std::string& key);
  absl::StatusOr<bool> Bool(const std::string& key, bool fallback);
  absl::StatusOr<std::string> String(const std::string& key);  // required
  absl::StatusOr<std::string> String(const std::string& key, const std::string& fallback);
  absl::StatusOr<int64_t> Int(const std::string& key, int64_t fallback);
  // A required array / object field.
  absl::StatusOr<const nlohmann::json*> Array(const std::string& key);
  absl::StatusOr<const nlohmann::json*> Object(const std::string& key);
  // Keys whose only effect is on offsets or training (trim_offsets, dropout 0, ...): read and ignored.
  void Ignore(const std::string& key) { read_.insert(key); }
  // An error naming the first key that was never read.
  absl::Status CheckAllRead() const;
  // "<where>.<key>" / "<where>.<key>[i]", for the components nested inside this one.
  std::string Child(const std::string& key) const;
  std::string Child(const std::string& key, size_t index) const;
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& object_;
  std::string where_;
  std::set<std::string> read_;
};

// The pattern field `key` of Replace and Split: {"String": "x"} (taken literally) or {"Regex": "..."}.
absl::StatusOr<std::shared_ptr<const Regex>> ReadPattern(JsonComponent& component, const std::string& key);

// A JsonComponent for `object`, or an error when it is not a JSON object.
absl::StatusOr<JsonComponent> ComponentOf(const nlohmann::json& object, const std::string& where);

}  // namespace arach
