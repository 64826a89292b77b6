#include "engine/tokenizer/post_processors.h"

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/tokenizer/json_component.h"

namespace arach {
namespace {

// Fixed ids before and after the sequence.
class Surround final : public PostProcessor {
 public:
  Surround(std::vector<int32_t> before, std::vector<int32_t> after) : before_(std::move(before)), after_(std::move(after)) {}
  void AddSpecialTokens(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }

 private:
  std::vector<int32_t> before_, after_;
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void AddSpecialTokens(std::vector<int32_t>& ids) const override {
    for (const auto& step : steps_) step->AddSpecialTokens(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// The "single" template: special tokens before and after the one sequence ($A).
absl::StatusOr<std::unique_ptr<PostProcessor>> ParseTemplate(JsonComponent& c) {
  ARACH_ASSIGN_OR_RETURN(const nlohmann::json* single, c.Array("single"));
  ARACH_ASSIGN_OR_RETURN(const nlohmann::json* special, c.Object("special_tokens"));
  c.Ignore("pair");  // pairs of sequences are never encoded here
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const nlohmann::json& item = (*single)[i];
    if (item.contains("Sequence")) {
      if (seen_sequence) return c.Error("the single template names the sequence twice");
      seen_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken") || !item["SpecialToken"].contains("id") || !item["SpecialToken"]["id"].is_string()) {
      return c.Error(absl::StrCat("single[", i, "] is neither {\"Sequence\": ...} nor {\"SpecialToken\": {\"id\": ...}}"));
    }
    const std::string key = item["SpecialToken"]["id"].get<std::string>();
    const auto it = special->find(key);
    if (it == special->end() || !it->contains("ids") || !(*it)["ids"].is_array()) {
      return c.Error(absl::StrCat("special token \"", key, "\" has no ids in special_tokens"));
    }
    for (const nlohmann::json& id : (*it)["ids"]) {
      if (!id.is_number_integer()) return c.Error(absl::StrCat("special token \"", key, "\" has a non-integer id"));
      (seen_sequence ? after : before).push_back(id.get<int32_t>());
    }
  }
  if (!seen_sequence) return c.Error("the single template has no {\"Sequence\": ...}");
  return std::unique_ptr<PostProcessor>(new Surround(std::move(before), std::move(after)));
}

// ["token", id] pairs of BertProcessing / RobertaProcessing.
absl::StatusOr<int32_t> ReadTokenPair(JsonComponent& c, const std::string& key) {
  const nlohmann::json* pair = c.Get(key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 || !(*pair)[1].is_number_integer()) {
    return c.Error(absl::StrCat("\"", key, "\" must be [\"token\", id]"));
  }
  return (*pair)[1].get<int32_t>();
}

}  // namespace

std::unique_ptr<PostProcessor> BosEosProcessor(int32_t bos, int32_t eos) {
  std::vector<int32_t> before, after;
  if (bos >= 0) before.push_back(bos);
  if (eos >= 0) after.push_back(eos);
  return std::make_unique<Surround>(std::move(before), std::move(after));
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const nlohmann::json& spec, const std::string& where) {
  ARACH_ASSIGN_OR_RETURN(JsonComponent c, ComponentOf(spec, where));
  ARACH_ASSIGN_OR_RETURN(const std::string type, c.Type());
  std::unique_ptr<PostProcessor> out;
  if (type == "TemplateProcessing") {
    ARACH_ASSIGN_OR_RETURN(out, ParseTemplate(c));
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    ARACH_ASSIGN_OR_RETURN(const int32_t cls, ReadTokenPair(c, "cls"));
    ARACH_ASSIGN_OR_RETURN(const int32_t sep, ReadTokenPair(c, "sep"));
    c.Ignore("trim_offsets");
    c.Ignore("add_prefix_space");
    out = std::make_unique<Surround>(std::vector<int32_t>{cls}, std::vector<int32_t>{sep});
  } else if (type == "ByteLevel") {
    for (const char* key : {"add_prefix_space", "trim_offsets", "use_regex"}) c.Ignore(key);  // offsets only
    out = std::make_unique<Surround>(std::vector<int32_t>{}, std::vector<int32_t>{});
  } else if (type == "Sequence") {
    ARACH_ASSIGN_OR_RETURN(const nlohmann::json* list, c.Array("processors"));
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      ARACH_ASSIGN_OR_RETURN(std::unique_ptr<PostProcessor> step, ParsePostProcessor((*list)[i], c.Child("processors", i)));
      steps.push_back(std::move(step));
    }
    out = std::make_unique<SequenceProcessor>(std::move(steps));
  } else {
    return c.Error(absl::StrCat("post-processor type \"", type,
                                "\" is not supported (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence)"));
  }
  ARACH_RETURN_IF_ERROR(c.CheckAllRead());
  return out;
}

}  // namespace arach
