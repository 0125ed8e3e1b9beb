#pragma once
// Paths of the real xmodel fixtures (../shared/fixtures/xmodel, see SOURCES.md there) and a
// scratch folder per test.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

namespace dpushard::testing {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(DPUSHARD_FIXTURE_DIR) / name;
}

inline const char* const kResNetInt = "resnet20_cifar10_int_quantized.xmodel";
inline const char* const kResNetVck190 = "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel";
inline const char* const kMobileNetKv260 = "mobilenetv2_yawn_compiled_dpuczdx8g_kv260_vai25.xmodel";

// The fixtures are not part of the repository. Empty when all three are in place; otherwise
// one line naming what is missing and how to provide it.
inline std::string missing_fixtures() {
  std::string missing;
  for (const char* name : {kResNetInt, kResNetVck190, kMobileNetKv260}) {
    if (!std::filesystem::is_regular_file(fixture(name)))
      missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  if (missing.empty()) return missing;
  return "real xmodel fixtures missing in " + std::string(DPUSHARD_FIXTURE_DIR) + ": " + missing +
         " (put the shared/ folder beside the project, or configure with "
         "-DDPUSHARD_FIXTURE_DIR=DIR)";
}

// .ci/run sets DPUSHARD_REQUIRE_SHARED=1 where ../shared exists: there a missing fixture is
// a failure, never a skip.
inline bool shared_required() {
  const char* v = std::getenv("DPUSHARD_REQUIRE_SHARED");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace dpushard::testing

// First statement of a test that reads the real fixtures: on a bare clone it skips with one
// line saying what is missing; where shared/ is required it fails instead.
#define DPUSHARD_REQUIRE_FIXTURES()                                                    \
  do {                                                                                 \
    if (const std::string dpushard_missing_ = ::dpushard::testing::missing_fixtures(); \
        !dpushard_missing_.empty()) {                                                  \
      if (::dpushard::testing::shared_required()) FAIL() << dpushard_missing_;         \
      GTEST_SKIP() << dpushard_missing_;                                               \
    }                                                                                  \
  } while (false)

namespace dpushard::testing {

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh folder under the system temp dir, removed with the test.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("dpushard_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace dpushard::testing
