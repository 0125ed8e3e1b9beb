// xmodel.proto against the real files: every field of every fixture is known to the schema
// (proto3 would keep a misnumbered field as an unknown one), and the writer's streamed
// output equals one deterministic serialization of the whole message.

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include "dpushard/xmodel/xmodel.hpp"
#include "xmodel.pb.h"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

namespace pb = google::protobuf;

// Counts unknown fields in `message` and every message below it.
int unknown_fields(const pb::Message& message) {
  const pb::Reflection* reflection = message.GetReflection();
  int count = reflection->GetUnknownFields(message).field_count();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i)
        count += unknown_fields(reflection->GetRepeatedMessage(message, field, i));
    } else {
      count += unknown_fields(reflection->GetMessage(message, field));
    }
  }
  return count;
}

std::string deterministic_bytes(const pb::Message& message) {
  std::string bytes;
  pb::io::StringOutputStream stream(&bytes);
  pb::io::CodedOutputStream out(&stream);
  out.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&out);
  out.Trim();
  return bytes;
}

class XmodelSchema : public ::testing::TestWithParam<const char*> {};

TEST_P(XmodelSchema, EveryFieldOfTheFixtureIsKnown) {
  DPUSHARD_REQUIRE_FIXTURES();
  xmodel::pb::Graph graph;
  ASSERT_TRUE(graph.ParseFromString(testing::read_bytes(testing::fixture(GetParam()))));
  EXPECT_GT(graph.op_node_size(), 0);
  EXPECT_EQ(unknown_fields(graph), 0);
  for (const std::string& bytes : graph.op_defs()) {
    xmodel::pb::OpDef def;
    ASSERT_TRUE(def.ParseFromString(bytes));
    EXPECT_FALSE(def.name().empty());
    EXPECT_EQ(unknown_fields(def), 0) << def.name();
  }
}

TEST_P(XmodelSchema, StreamedWriterEqualsOneDeterministicSerialization) {
  DPUSHARD_REQUIRE_FIXTURES();
  const std::string written = serialize_xmodel(read_xmodel(testing::fixture(GetParam())));
  xmodel::pb::Graph graph;
  ASSERT_TRUE(graph.ParseFromString(written));
  EXPECT_EQ(deterministic_bytes(graph), written);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, XmodelSchema,
                         ::testing::Values(testing::kResNetInt, testing::kResNetVck190,
                                           testing::kMobileNetKv260));

TEST(XmodelSchemaOrder, AttrValueKindsFollowTheVariant) {
  // dpushard::AttrValue index i is oneof field i + 4 (attr.hpp).
  const pb::OneofDescriptor* oneof = xmodel::pb::AttrValue::descriptor()->FindOneofByName("value");
  ASSERT_NE(oneof, nullptr);
  ASSERT_EQ(oneof->field_count(), static_cast<int>(std::variant_size_v<AttrValue>));
  for (int i = 0; i < oneof->field_count(); ++i) EXPECT_EQ(oneof->field(i)->number(), i + 4);
}

}  // namespace
}  // namespace dpushard
