// The one scratch folder of a fuzzing process: <temp>/arach-fuzz-<name>-<pid> ($TMPDIR or /tmp), made on first use
// and removed when the process exits (libFuzzer ends a timed run with exit(), which runs atexit handlers). A crash
// leaves it behind with the files of the input that crashed; scripts/fuzz.sh gives the fuzzers a TMPDIR of their own
// and fails when a run that ended normally left anything in it. One folder a process: `name` is the first call's
// (every target calls it with one name).
#ifndef ARACH_TESTS_FUZZ_FUZZ_SCRATCH_DIR_H_
#define ARACH_TESTS_FUZZ_FUZZ_SCRATCH_DIR_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace arach::fuzz {

inline const std::filesystem::path& ScratchDir(const std::string& name) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("arach-fuzz-" + name + "-" + std::to_string(::getpid()));
  // Registered once `dir` is made, so that exit() runs the removal before it destroys `dir`.
  static const bool made = [] {
    std::filesystem::create_directories(dir);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    return true;
  }();
  (void)made;
  return dir;
}

}  // namespace arach::fuzz

#endif  // ARACH_TESTS_FUZZ_FUZZ_SCRATCH_DIR_H_
