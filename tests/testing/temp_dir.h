// A fresh temporary folder per test, removed afterwards.
#pragma once

#include <filesystem>
#include <string>
#include <unistd.h>

#include "gtest/gtest.h"

namespace arach::testing {

class ScopedTempDir {
 public:
  ScopedTempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info == nullptr ? "arach" : std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name) if (c == '/') c = '_';
    path_ = std::filesystem::path(::testing::TempDir()) / ("arach_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace arach::testing
