#include "tests/testing/slow_model.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tools/make_model/make_model.h"

namespace arach::testing {

std::string SlowModelDir() {
  const std::string dir = std::string(ARACH_TEST_MODELS_DIR) + "/gpt2-124m-f16";
  if (!std::filesystem::exists(dir + "/preproj.safetensors")) {
    MakeModelOptions options;
    options.arch = "gpt2";
    options.preset = "124m";
    options.dtype = "F16";
    options.write_adapter = true;
    options.out_dir = dir;
    const auto made = MakeModel(options);
    if (!made.ok()) std::fprintf(stderr, "SlowModelDir: %s\n", made.status().ToString().c_str());
  }
  return dir;
}

}  // namespace arach::testing
