#pragma once
// A temporary folder removed at the end of a test.

#include <filesystem>
#include <string>

#include "util/crypto.hpp"

namespace gpunex::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    util::init_crypto();
    path = std::filesystem::temp_directory_path() / ("gpunex-agent-test-" + util::random_token(8));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path.string(); }
};

}  // namespace gpunex::testing
