// The one .npy reader and writer: NumPy's own spelling, every dtype as float, strictness.

#include "dpushard/base/npy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "dpushard/base/error.hpp"
#include "support/npy_file.hpp"

namespace dpushard {
namespace {

template <typename T>
NpyArray array_of(NpyArray::Type type, std::vector<std::int64_t> shape, std::vector<T> values) {
  NpyArray a;
  a.type = type;
  a.shape = std::move(shape);
  a.data.resize(values.size() * sizeof(T));
  std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

std::string header_of(const std::string& file) {
  const std::size_t length = static_cast<unsigned char>(file[8]) |
                             static_cast<std::size_t>(static_cast<unsigned char>(file[9])) << 8;
  return file.substr(10, length);
}

// np.save writes version 1.0, the dict below, and pads with spaces and a newline so the
// data starts at a multiple of 64 bytes.
TEST(Npy, WritesWhatNumPyWrites) {
  const std::string one = npy_bytes(array_of<std::int8_t>(NpyArray::Type::Int8, {3}, {1, -2, 3}));
  EXPECT_EQ(one.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::string header = header_of(one);
  EXPECT_EQ(header.rfind("{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }", 0), 0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ((10 + header.size()) % 64, 0u);
  EXPECT_EQ(one.substr(10 + header.size()), std::string("\x01\xfe\x03", 3));
  EXPECT_NE(header_of(npy_bytes(array_of<float>(NpyArray::Type::Float32, {2, 1}, {1.f, 2.f})))
                .find("'<f4', 'fortran_order': False, 'shape': (2, 1), }"),
            std::string::npos);
  EXPECT_NE(header_of(npy_bytes(array_of<double>(NpyArray::Type::Float64, {}, {0.5})))
                .find("'shape': (), }"),
            std::string::npos);
}

// The tests' own writer (tests/support/npy_file.hpp), which spells .npy files by hand for the
// command-line tests, writes the same bytes as the one writer, shapes of every rank included.
TEST(Npy, TheTestsHandWrittenFilesAreWhatTheWriterWrites) {
  for (const std::vector<std::int64_t>& shape :
       std::vector<std::vector<std::int64_t>>{{}, {3}, {1, 3}, {1, 1, 3}, {1, 1, 1, 3}}) {
    const std::vector<std::int8_t> values =
        shape.empty() ? std::vector<std::int8_t>{7} : std::vector<std::int8_t>{1, -2, 3};
    const NpyArray array = array_of<std::int8_t>(NpyArray::Type::Int8, shape, values);
    EXPECT_EQ(testing::npy_file("|i1", testing::npy_shape(shape), array.data), npy_bytes(array))
        << testing::npy_shape(shape);
  }
  EXPECT_EQ(testing::npy_shape({1, 32, 32, 3}), "(1, 32, 32, 3)");
  EXPECT_EQ(testing::npy_shape({5}), "(5,)");
  EXPECT_EQ(testing::npy_shape({}), "()");
}

TEST(Npy, EveryDtypeReadsBackAsFloat) {
  const std::vector<NpyArray> arrays = {
      array_of<std::int8_t>(NpyArray::Type::Int8, {2}, {-128, 127}),
      array_of<std::uint8_t>(NpyArray::Type::UInt8, {2}, {0, 255}),
      array_of<std::uint8_t>(NpyArray::Type::Bool, {2}, {0, 1}),
      array_of<std::int16_t>(NpyArray::Type::Int16, {2}, {-300, 300}),
      array_of<std::int32_t>(NpyArray::Type::Int32, {2}, {-70000, 70000}),
      array_of<std::int64_t>(NpyArray::Type::Int64, {2}, {-5, 1LL << 40}),
      array_of<float>(NpyArray::Type::Float32, {2}, {0.25f, -1.5f}),
      array_of<double>(NpyArray::Type::Float64, {2}, {0.125, 3.0}),
  };
  const std::vector<std::vector<float>> expected = {
      {-128, 127},    {0, 255},        {0, 1},
      {-300, 300},    {-70000, 70000}, {-5, static_cast<float>(1LL << 40)},
      {0.25f, -1.5f}, {0.125f, 3.0f}};
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const NpyArray back = parse_npy(npy_bytes(arrays[i]), "a.npy");
    EXPECT_EQ(back.type, arrays[i].type) << npy_descr(arrays[i].type);
    EXPECT_EQ(back.shape, arrays[i].shape);
    EXPECT_EQ(back.to_float(), expected[i]) << npy_descr(arrays[i].type);
  }
}

TEST(Npy, Int8ValuesOnlyFromInt8) {
  const NpyArray i8 = array_of<std::int8_t>(NpyArray::Type::Int8, {2}, {-1, 5});
  EXPECT_EQ(i8.int8_values("x.npy"), (std::vector<std::int8_t>{-1, 5}));
  const NpyArray f32 = array_of<float>(NpyArray::Type::Float32, {1}, {1.f});
  try {
    (void)f32.int8_values("x.npy");
    FAIL() << "float32 read as int8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.npy"), std::string::npos) << e.what();
  }
}

TEST(Npy, RefusesWhatItCannotReadExactlyNamingTheFile) {
  const std::string good = npy_bytes(array_of<std::int8_t>(NpyArray::Type::Int8, {3}, {1, 2, 3}));
  const auto refused = [](const std::string& bytes) {
    try {
      (void)parse_npy(bytes, "in.npy");
    } catch (const Error& e) {
      return std::string(e.what()).rfind("in.npy: ", 0) == 0;
    }
    return false;
  };
  EXPECT_TRUE(refused(good.substr(0, good.size() - 1)));  // one value short
  EXPECT_TRUE(refused(good + "x"));                       // one byte too many
  EXPECT_TRUE(refused("not numpy at all"));
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_TRUE(refused(fortran));
  std::string big_endian = good;
  big_endian.replace(big_endian.find("|i1"), 3, ">i2");
  EXPECT_TRUE(refused(big_endian));
  std::string other_key = good;
  other_key.replace(other_key.find("'shape'"), 7, "'shapes'");
  EXPECT_TRUE(refused(other_key));
}

}  // namespace
}  // namespace dpushard
