// Damaged, truncated and foreign files: each gives a dpushard::Error whose one-line message
// names the file, protobuf stays silent on stderr, and nothing crashes.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <random>
#include <set>

#include "dpushard/xmodel/xmodel.hpp"
#include "xmodel.pb.h"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::fixture;
using testing::ScratchDir;

// Runs `f`, which must throw a dpushard::Error with a one-line message that names `origin`
// (and contains `fragment`); returns the message.
std::string expect_error(const std::function<void()>& f, const std::string& origin,
                         const std::string& fragment = "") {
  try {
    f();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(origin + ": ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << "no error for " << origin;
  return "";
}

std::string read_error(const std::filesystem::path& path, const std::string& fragment = "") {
  return expect_error([&] { read_xmodel(path); }, path.string(), fragment);
}

std::string parse_error(const std::string& bytes, const std::string& fragment = "") {
  return expect_error([&] { parse_xmodel(bytes, "crafted.xmodel"); }, "crafted.xmodel", fragment);
}

// The smallest valid xmodel: one data op and the plain root XIR writes.
xmodel::pb::Graph minimal() {
  xmodel::pb::Graph g;
  g.set_graph_name("tiny");
  auto* op = g.add_op_node();
  op->set_op_name("in");
  op->set_op_type("data");
  op->mutable_output_tensor()->set_tensor_name("in");
  op->mutable_output_tensor()->add_tensor_dim(1);
  op->mutable_output_tensor()->set_data_type(4);
  op->mutable_output_tensor()->set_tensor_bit_width(32);
  g.mutable_subg_root()->set_subgraph_name("root");
  g.mutable_subg_root()->add_op_name("in");
  return g;
}

// Adds op `name` consuming `input` and lists it in the root.
void add_consumer(xmodel::pb::Graph& g, const std::string& name, const std::string& input) {
  auto* op = g.add_op_node();
  op->set_op_name(name);
  op->set_op_type("relu");
  auto* arg = op->add_args();
  arg->set_arg_name("input");
  arg->add_arg_ops(input);
  op->mutable_output_tensor()->set_tensor_name(name);
  g.mutable_subg_root()->add_op_name(name);
}

std::string varint(std::uint64_t value) {
  std::string bytes;
  for (; value >= 0x80; value >>= 7) bytes += static_cast<char>((value & 0x7F) | 0x80);
  return bytes + static_cast<char>(value);
}

// A length field of 2^32 + 4 once read as 4 (its low 32 bits), and the file as a valid
// model; every length is read as 64 bits and checked against the bytes that follow.
TEST(XmodelCorrupt, LengthsOf2To32OrMoreAreNotCutTo32Bits) {
  const std::string valid = minimal().SerializeAsString();
  ASSERT_EQ(valid.substr(0, 2), std::string("\x0A\x04", 2));  // graph_name, 4 bytes
  const std::string rest = valid.substr(2);
  EXPECT_NO_THROW(parse_xmodel(valid, "crafted.xmodel"));
  const std::string follow = std::to_string(rest.size()) + " follow";
  parse_error("\x0A" + varint((std::uint64_t{1} << 32) + 4) + rest,
              "declares 4294967300 bytes but only " + follow);
  parse_error("\x0A" + varint(std::uint64_t{1} << 62) + rest,
              "declares 4611686018427387904 bytes but only " + follow);
  parse_error("\x0A" + varint(~std::uint64_t{0}) + rest, "declares 18446744073709551615 bytes");
}

TEST(XmodelCorrupt, MissingEmptyDirectoryAndTextFiles) {
  ScratchDir dir;
  read_error(dir / "missing.xmodel", "no such file");
  read_error(dir.path(), "directory");
  testing::write_bytes(dir / "empty.xmodel", "");
  read_error(dir / "empty.xmodel", "empty");
  testing::write_bytes(dir / "notes.xmodel", "This is a text file, not a model.\nSecond line.\n");
  read_error(dir / "notes.xmodel", "not an xmodel");
  testing::write_bytes(dir / "zeros.xmodel", std::string(4096, '\0'));
  read_error(dir / "zeros.xmodel", "not an xmodel");
  testing::write_bytes(dir / "onnx_like.xmodel",
                       "\x08\x07\x12\x07pytorch\x1a\x03"
                       "2.1");
  read_error(dir / "onnx_like.xmodel", "not an xmodel");
}

TEST(XmodelCorrupt, FileOverProtobufsLimitIsRefusedUpFront) {
  ScratchDir dir;
  const auto path = dir / "huge.xmodel";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, (off_t{1} << 31) + 16), 0);  // sparse: takes no disk space
  ::close(fd);
  read_error(path, "2 GiB");
}

// Every cut of a file is an error, except a cut exactly between two op definitions at the
// end, which leaves a well-formed file (protobuf has no length or checksum to tell).
void check_truncations(const char* name, int cuts) {
  ScratchDir dir;
  const std::string bytes = testing::read_bytes(fixture(name));
  const Graph whole = parse_xmodel(bytes, name);
  std::set<std::size_t> clean_cuts;
  std::size_t end = bytes.size();
  for (auto it = whole.op_defs().rbegin(); it != whole.op_defs().rend(); ++it) {
    std::size_t length_bytes = 1;
    for (std::size_t n = it->size(); n >= 0x80; n >>= 7) ++length_bytes;
    end -= 2 + length_bytes + it->size();  // tag of field 101 is two bytes
    clean_cuts.insert(end);
  }
  std::vector<std::size_t> offsets = {1, 2, 3, 5, 17, 100, bytes.size() - 2, bytes.size() - 1};
  for (int i = 1; i <= cuts; ++i)
    offsets.push_back(bytes.size() * static_cast<std::size_t>(i) /
                      static_cast<std::size_t>(cuts + 1));
  const auto path = dir / "cut.xmodel";
  for (std::size_t offset : offsets) {
    testing::write_bytes(path, bytes.substr(0, offset));
    if (clean_cuts.count(offset)) {
      EXPECT_LT(read_xmodel(path).op_defs().size(), whole.op_defs().size());
    } else {
      SCOPED_TRACE("cut at " + std::to_string(offset));
      read_error(path);
    }
  }
}

TEST(XmodelCorrupt, TruncatedIntFixture) {
  DPUSHARD_REQUIRE_FIXTURES();
  check_truncations(testing::kResNetInt, 40);
}
TEST(XmodelCorrupt, TruncatedCompiledFixture) {
  DPUSHARD_REQUIRE_FIXTURES();
  check_truncations(testing::kResNetVck190, 40);
}

TEST(XmodelCorrupt, TruncationInsideTheOpsSaysSo) {
  DPUSHARD_REQUIRE_FIXTURES();
  const std::string bytes = testing::read_bytes(fixture(testing::kResNetInt));
  parse_error(bytes.substr(0, bytes.size() / 2), "truncated");
  // Cut exactly after the ops: the subgraph tree is gone.
  const Graph whole = parse_xmodel(bytes, "whole");
  xmodel::pb::Graph ops_only;
  ASSERT_TRUE(ops_only.ParseFromString(bytes));
  ops_only.clear_subg_root();
  ops_only.clear_op_defs();
  parse_error(ops_only.SerializeAsString(), "no root subgraph");
}

// Random damage either still parses (a flipped weight byte is undetectable) or gives a clean
// error; protobuf must never log and nothing may crash. Structural damage must be caught.
void check_random_flips(const char* name, int trials) {
  const std::string bytes = testing::read_bytes(fixture(name));
  std::mt19937_64 rng(20240611);
  int errors = 0;
  ::testing::internal::CaptureStderr();
  for (int t = 0; t < trials; ++t) {
    std::string damaged = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    // Half the trials hit the first 4 KiB, where op names, types and lengths are dense.
    const std::size_t span = (t % 2 == 0) ? 4096 : damaged.size();
    for (int f = 0; f < flips; ++f) damaged[rng() % span] ^= static_cast<char>(1 + rng() % 255);
    try {
      parse_xmodel(damaged, "flipped.xmodel");
    } catch (const Error& e) {
      ++errors;
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("flipped.xmodel: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_GT(errors, trials / 4);
}

TEST(XmodelCorrupt, RandomFlipsInt) {
  DPUSHARD_REQUIRE_FIXTURES();
  check_random_flips(testing::kResNetInt, 150);
}
TEST(XmodelCorrupt, RandomFlipsCompiled) {
  DPUSHARD_REQUIRE_FIXTURES();
  check_random_flips(testing::kResNetVck190, 150);
}

TEST(XmodelCorrupt, StructuralDamageIsCaught) {
  DPUSHARD_REQUIRE_FIXTURES();
  const std::string bytes = testing::read_bytes(fixture(testing::kResNetInt));
  std::string bad_tag = bytes;
  bad_tag[0] = '\x0f';  // field 1 with wire type 7, which does not exist
  parse_error(bad_tag, "not an xmodel");
  // graph_name is 11 bytes ("CifarResNet"); the first op_node's length follows its tag.
  ASSERT_EQ(bytes[13], '\x2a');
  std::string long_op = bytes;
  long_op[14] = '\xff';
  long_op[15] = '\xff';
  long_op[16] = '\xff';
  long_op[17] = '\x7f';
  parse_error(long_op, "op_node at byte 13 declares");
}

TEST(XmodelCorrupt, CraftedGraphsBreakingXmodelRules) {
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(parse_xmodel(minimal().SerializeAsString(), "crafted.xmodel"));

  xmodel::pb::Graph duplicate = minimal();
  *duplicate.add_op_node() = duplicate.op_node(0);
  parse_error(duplicate.SerializeAsString(), "duplicate op name 'in'");

  xmodel::pb::Graph dangling = minimal();
  add_consumer(dangling, "act", "ghost");
  parse_error(dangling.SerializeAsString(), "names op 'ghost'");

  xmodel::pb::Graph unknown_kind = minimal();
  auto& value = (*unknown_kind.mutable_op_node(0)->mutable_op_attr())["shape"];
  value.GetReflection()->MutableUnknownFields(&value)->AddVarint(40, 1);
  const std::string what = parse_error(unknown_kind.SerializeAsString(), "unknown kind (field 40)");
  EXPECT_NE(what.find("op 'in'"), std::string::npos) << what;
  EXPECT_NE(what.find("'shape'"), std::string::npos) << what;

  xmodel::pb::Graph no_value = minimal();
  (*no_value.mutable_subg_root()->mutable_subg_attr())["device"];
  parse_error(no_value.SerializeAsString(), "subgraph 'root': attribute 'device' has no value");

  xmodel::pb::Graph bad_type = minimal();
  bad_type.mutable_op_node(0)->mutable_output_tensor()->set_data_type(99);
  parse_error(bad_type.SerializeAsString(), "data_type 99");

  xmodel::pb::Graph no_ops = minimal();
  no_ops.clear_op_node();
  parse_error(no_ops.SerializeAsString(), "no ops");

  xmodel::pb::Graph no_root = minimal();
  no_root.clear_subg_root();
  parse_error(no_root.SerializeAsString(), "no root subgraph");

  xmodel::pb::Graph stray = minimal();
  stray.mutable_subg_root()->add_op_name("ghost");
  parse_error(stray.SerializeAsString(), "names op 'ghost'");

  xmodel::pb::Graph uncovered = minimal();
  add_consumer(uncovered, "act", "in");
  uncovered.mutable_subg_root()->mutable_op_name()->RemoveLast();
  uncovered.mutable_subg_root()->add_subg_child()->add_op_name("in");
  parse_error(uncovered.SerializeAsString(), "op 'act' is in no subgraph");

  xmodel::pb::Graph bad_def = minimal();
  bad_def.add_op_defs("\x0f\x01");
  parse_error(bad_def.SerializeAsString(), "op_defs");

  // Nesting far past protobuf's recursion limit fails cleanly instead of exhausting the stack.
  xmodel::pb::Graph deep = minimal();
  xmodel::pb::SubGraph* node = deep.mutable_subg_root();
  for (int i = 0; i < 500; ++i) node = node->add_subg_child();
  parse_error(deep.SerializeAsString(), "subg_root");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace dpushard
