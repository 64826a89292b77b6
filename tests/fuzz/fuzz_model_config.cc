// libFuzzer: config.json parsing returns a config or an error naming a field for any input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = arach::ParseModelConfig(text, "fuzz/config.json");
  if (!config.ok()) return 0;
  // An accepted config is self-consistent.
  if (config->hidden_size <= 0 || config->num_heads <= 0 || config->head_dim <= 0 || config->vocab_size <= 0 ||
      config->num_kv_heads <= 0 || config->num_heads % config->num_kv_heads != 0) {
    std::abort();
  }
  if (config->use_rope) (void)config->rope.InverseFrequencies();
  return 0;
}
