// libFuzzer: arbitrary bytes as a chat template are parsed (an error names a line and column, or the
// template is accepted) and accepted ones are rendered over a small conversation, also with its final message left
// open (continue_final_message): no crash, no hang (the interpreter bounds steps, output and recursion), every
// failure a status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  arach::TokenizerConfig tokens;
  tokens.bos_token = "<s>";
  tokens.eos_token = "</s>";
  auto tmpl = arach::ChatTemplate::Parse(std::string(reinterpret_cast<const char*>(data), size), tokens, "fuzz");
  if (!tmpl.ok()) {
    if (tmpl.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  arach::ChatInput input;
  input.messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi {{x}} é"},
          {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}])");
  input.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  (void)(*tmpl)->Render(input);
  // The same template leaving a final assistant message open (continue_final_message): the cut after its text.
  input.messages.back() = nlohmann::ordered_json{{"role", "assistant"}, {"content", " Sure, </s> "}};
  input.add_generation_prompt = false;
  input.continue_final_message = true;
  const absl::StatusOr<std::string> open = (*tmpl)->Render(input);
  if (!open.ok() && open.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
  return 0;
}
