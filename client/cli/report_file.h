// Writes a JSON report to a file, checking that every byte reached it (errors name the file).
#pragma once

#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace arach::client {

inline absl::Status WriteReport(const std::string& path, const nlohmann::json& report) {
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write the report to ", path));
  return absl::OkStatus();
}

}  // namespace arach::client
