#include "cmdline/flag_names.h"

namespace arach::cmdline {

std::vector<char*> NormalizeFlagNames(int argc, char** argv, std::vector<std::string>& storage) {
  storage.assign(argv, argv + argc);
  bool after_separator = false;
  for (size_t i = 1; i < storage.size(); ++i) {
    std::string& arg = storage[i];
    if (arg == "--") after_separator = true;
    if (after_separator || arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const size_t end = arg.find('=');
    for (size_t c = 2; c < std::min(end, arg.size()); ++c) {
      if (arg[c] == '-') arg[c] = '_';
    }
  }
  std::vector<char*> out;
  for (std::string& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace arach::cmdline
