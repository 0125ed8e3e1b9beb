// The one SHA-256: known answers, streaming equals one shot, files, hex in and out.

#include "dpushard/base/sha256.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard {
namespace {

std::span<const std::uint8_t> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

// FIPS 180-2 appendix B.1 and the empty message.
TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(to_hex(sha256(bytes_of("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256(bytes_of(""))),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, StreamingInPiecesEqualsOneShot) {
  const std::string text(100000, 'x');
  Sha256 stream;
  for (std::size_t at = 0; at < text.size(); at += 777)
    stream.update(text.data() + at, std::min<std::size_t>(777, text.size() - at));
  EXPECT_EQ(stream.finish(), sha256(bytes_of(text)));
}

TEST(Sha256, FileEqualsItsBytesAndAFolderIsNamed) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "dpushard_sha256_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string text(3 << 20, 'q');  // more than the 1 MiB read buffer
  std::ofstream(dir / "f.bin", std::ios::binary) << text;
  EXPECT_EQ(sha256_file(dir / "f.bin"), to_hex(sha256(bytes_of(text))));
  try {
    (void)sha256_file(dir);
    FAIL() << "a folder was hashed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)sha256_file(dir / "missing"), Error);
  std::filesystem::remove_all(dir);
}

TEST(Sha256, HexReadsBackAndRefusesWhatIsNotADigest) {
  const Sha256Digest d = sha256(bytes_of("dpushard"));
  EXPECT_EQ(sha256_from_hex(to_hex(d)), d);
  std::string upper = to_hex(d);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(sha256_from_hex(upper), d);
  EXPECT_THROW(sha256_from_hex("abc"), Error);
  EXPECT_THROW(sha256_from_hex(std::string(64, 'g')), Error);
}

TEST(Sha256, TensorHashIsTheHashOfItsBytes) {
  QTensor t;
  t.name = "t";
  t.shape = {1, 3};
  t.data = {1, -2, 3};
  const std::string raw = {'\x01', '\xfe', '\x03'};
  EXPECT_EQ(sha256_hex(t.data), to_hex(sha256(bytes_of(raw))));
}

}  // namespace
}  // namespace dpushard
