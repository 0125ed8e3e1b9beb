// write_file_atomically / AtomicFile: the target is replaced whole, and a failure leaves
// neither a temporary file nor a changed target behind.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("dpushard-atomic-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

TEST(AtomicFile, WritesThenReplacesWholeAndLeavesNothingElse) {
  const fs::path dir = fresh_dir("replace");
  write_file_atomically(dir / "a.txt", "first\n");
  EXPECT_EQ(read(dir / "a.txt"), "first\n");
  write_file_atomically(dir / "a.txt", std::string(1 << 20, 'x'));
  EXPECT_EQ(read(dir / "a.txt").size(), 1u << 20);
  EXPECT_EQ(entries(dir), 1u);
  fs::remove_all(dir);
}

TEST(AtomicFile, AFileNeverCommittedLeavesNoTemporary) {
  const fs::path dir = fresh_dir("abandon");
  write_file_atomically(dir / "kept.txt", "old");
  {
    AtomicFile file(dir / "kept.txt");
    file.write("new, but abandoned");
    EXPECT_EQ(entries(dir), 2u);  // the target and the hidden temporary
  }
  EXPECT_EQ(read(dir / "kept.txt"), "old");
  EXPECT_EQ(entries(dir), 1u);
  fs::remove_all(dir);
}

TEST(AtomicFile, AFailedRenameNamesThePathAndKeepsTheTarget) {
  const fs::path dir = fresh_dir("fail");
  fs::create_directories(dir / "taken" / "inside");  // a non-empty folder cannot be replaced
  try {
    write_file_atomically(dir / "taken", "bytes");
    FAIL() << "a folder was replaced by a file";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind((dir / "taken").string() + ": cannot rename ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  EXPECT_TRUE(fs::is_directory(dir / "taken" / "inside"));
  EXPECT_EQ(entries(dir), 1u);
  fs::remove_all(dir);
}

TEST(AtomicFile, AMissingFolderIsOneLine) {
  const fs::path dir = fresh_dir("missing");
  try {
    write_file_atomically(dir / "no" / "such" / "file.txt", "bytes");
    FAIL() << "wrote into a missing folder";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  (dir / "no" / "such" / "file.txt").string() + ": cannot create ", 0),
              0u)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "no"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dpushard
