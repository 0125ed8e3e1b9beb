// Writes the IR as an xmodel. The Graph message is streamed: the name, then each op
// encoded on its own, then the subgraph tree, graph attributes and op definitions, so the
// bytes equal one deterministic serialization of the whole message (fields in ascending
// order, map entries sorted) while only one op is ever held in protobuf form.

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>
#include <limits>

#include "attr_codec.hpp"
#include "dpushard/base/atomic_file.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "graph_codec.hpp"
#include "structure.hpp"
#include "xmodel.pb.h"

namespace dpushard {
namespace {

namespace pbio = google::protobuf::io;

constexpr std::uint32_t kOpNodeTag = (5 << 3) | 2;  // field 5, length-delimited

// Raised when the serialized graph would pass protobuf's 2 GiB limit; no reader could
// parse such a file.
[[noreturn]] void too_large(std::uint64_t bytes) {
  throw Error("the graph needs more than " + std::to_string(bytes) +
              " bytes, over protobuf's 2 GiB message limit");
}

void write_message(const google::protobuf::MessageLite& message, std::uint64_t& total,
                   pbio::CodedOutputStream& out, bool as_op_node) {
  const std::size_t size = message.ByteSizeLong();
  total += size + (as_op_node ? 2 + 5 : 0);  // tag and length varint, at most
  if (total > xmodel::kMaxMessageBytes) too_large(total);
  if (as_op_node) {
    out.WriteTag(kOpNodeTag);
    out.WriteVarint32(static_cast<std::uint32_t>(size));
  }
  message.SerializeWithCachedSizes(&out);
}

// Streams `graph` into `stream`; throws dpushard::Error without the file name.
void write_graph(const Graph& graph, pbio::ZeroCopyOutputStream& stream) {
  xmodel::check_structure(graph);
  pbio::CodedOutputStream out(&stream);
  out.SetSerializationDeterministic(true);
  std::uint64_t total = 0;

  xmodel::pb::Graph head;
  head.set_graph_name(graph.name());
  write_message(head, total, out, false);

  // Producers before consumers: XIR adds ops in file order and crashes on an input it has
  // not seen yet (found by tests/vart). The order is stable, so a file in order keeps it.
  for (const std::size_t i : graph.topological_order())
    write_message(xmodel::op_to_proto(graph.ops()[i]), total, out, true);

  // Fields 10, 11 and 101 follow the ops, as in one serialization of the whole message.
  xmodel::pb::Graph tail;
  xmodel::subgraph_to_proto(graph.root() ? *graph.root() : xmodel::plain_root(graph),
                            *tail.mutable_subg_root());
  xmodel::attrs_to_proto(graph.attrs(), *tail.mutable_graph_attr());
  for (const auto& def : graph.op_defs()) tail.add_op_defs(def);
  write_message(tail, total, out, false);

  out.Trim();
  if (out.HadError()) throw Error("write failed");
}

}  // namespace

std::string serialize_xmodel(const Graph& graph) {
  std::string bytes;
  {
    pbio::StringOutputStream stream(&bytes);
    write_graph(graph, stream);
  }
  return bytes;
}

void write_xmodel(const Graph& graph, const std::filesystem::path& path) {
  AtomicFile file(path);
  pbio::FileOutputStream stream(file.fd(), 1 << 20);
  try {
    write_graph(graph, stream);
  } catch (const Error& e) {
    // The stream's own error (a full disk) says why; "write failed" alone does not.
    if (stream.GetErrno() != 0)
      throw Error(path.string() + ": cannot write: " + std::strerror(stream.GetErrno()));
    throw Error(path.string() + ": " + e.what());
  }
  if (!stream.Flush())
    throw Error(path.string() + ": cannot write: " + std::strerror(stream.GetErrno()));
  file.commit();
}

}  // namespace dpushard
