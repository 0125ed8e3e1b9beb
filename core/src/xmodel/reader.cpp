// Reads xmodel files into the IR. The top level of the Graph message is read field by
// field: each op is decoded and moved into the IR on its own, so a model with a gigabyte
// of weights is never held twice, and a file that ends early is reported at the field
// that runs past the end.

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "attr_codec.hpp"
#include "dpushard/base/regular_file.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "graph_codec.hpp"
#include "structure.hpp"
#include "xmodel.pb.h"

namespace dpushard {
namespace {

namespace pbio = google::protobuf::io;

// Top-level fields of the Graph message (XIR's serial_v2.Graph).
constexpr std::uint32_t kGraphName = 1;
constexpr std::uint32_t kOpNode = 5;
constexpr std::uint32_t kSubgRoot = 10;
constexpr std::uint32_t kGraphAttr = 11;
constexpr std::uint32_t kOpDefs = 101;

constexpr std::uint32_t kWireVarint = 0;
constexpr std::uint32_t kWireFixed64 = 1;
constexpr std::uint32_t kWireLengthDelimited = 2;
constexpr std::uint32_t kWireFixed32 = 5;

std::string field_label(std::uint32_t field) {
  switch (field) {
    case kGraphName:
      return "graph_name";
    case kOpNode:
      return "op_node";
    case kSubgRoot:
      return "subg_root";
    case kGraphAttr:
      return "graph_attr";
    case kOpDefs:
      return "op_defs";
    default:
      return "field " + std::to_string(field);
  }
}

bool is_known_field(std::uint32_t field) {
  return field == kGraphName || field == kOpNode || field == kSubgRoot || field == kGraphAttr ||
         field == kOpDefs;
}

void check_size(std::uint64_t size, const std::string& origin) {
  if (size == 0) throw Error(origin + ": empty file");
  if (size > xmodel::kMaxMessageBytes)
    throw Error(origin + ": " + std::to_string(size) +
                " bytes is over protobuf's 2 GiB message limit, so it cannot be an xmodel");
}

class GraphReader {
 public:
  GraphReader(pbio::ZeroCopyInputStream& stream, std::uint64_t size, std::string origin)
      : in_(&stream), size_(size), origin_(std::move(origin)) {
    // The real size, not protobuf's 2 GiB ceiling: with the end in sight, ReadString
    // reserves a field's bytes at once instead of growing the string chunk by chunk.
    in_.SetTotalBytesLimit(static_cast<int>(size));
  }

  Graph read() {
    // Garbage must not make protobuf log to stderr; errors are reported by the checks here.
    google::protobuf::LogSilencer silence;
    while (position() < size_) {
      const std::uint64_t start = position();
      const std::uint32_t tag = in_.ReadTag();
      if (tag == 0) broken("no protobuf field at byte " + std::to_string(start));
      read_field(tag >> 3, tag & 7, start);
    }
    return finish();
  }

 private:
  std::uint64_t position() const { return static_cast<std::uint64_t>(in_.CurrentPosition()); }

  [[noreturn]] void fail(const std::string& what) const { throw Error(origin_ + ": " + what); }

  // A framing error: damage in an xmodel, or, before any xmodel field was read, a file of
  // another kind (a text file, an ONNX model, ...).
  [[noreturn]] void broken(const std::string& what) const {
    if (!seen_xmodel_field_) fail("not an xmodel (" + what + ")");
    fail("truncated or damaged: " + what);
  }

  // Runs a conversion or check that throws without the file name, adding it.
  template <typename F>
  auto named(F&& f) const {
    try {
      return f();
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  std::string at(std::uint32_t field, std::uint64_t start) const {
    return field_label(field) + " at byte " + std::to_string(start);
  }

  void read_field(std::uint32_t field, std::uint32_t wire, std::uint64_t start) {
    if (wire != kWireLengthDelimited) {
      if (is_known_field(field) || field == 0)
        broken(at(field, start) + " has wire type " + std::to_string(wire));
      skip_scalar(field, wire, start);
      return;
    }
    // Read as 64 bits: ReadVarint32 would keep the low 32 bits of a longer length and read
    // a different, valid-looking field. Any length is then checked against what remains.
    std::uint64_t length = 0;
    if (!in_.ReadVarint64(&length)) broken(at(field, start) + " has no valid length");
    const std::uint64_t remaining = size_ - position();
    if (length > remaining)
      broken(at(field, start) + " declares " + std::to_string(length) + " bytes but only " +
             std::to_string(remaining) + " follow");
    if (!is_known_field(field)) {  // a field from a newer XIR: skipped
      if (!in_.Skip(static_cast<int>(length))) broken(at(field, start) + " ends early");
      return;
    }
    seen_xmodel_field_ = true;
    if (field == kOpNode) {  // parsed in place: an op's weights are copied once, not twice
      add_op(length, start);
      return;
    }
    std::string payload;
    if (!in_.ReadString(&payload, static_cast<int>(length)))
      broken(at(field, start) + " ends early");
    switch (field) {
      case kGraphName:
        name_ = std::move(payload);
        break;
      case kSubgRoot:
        if (!root_.MergeFromString(payload)) fail("damaged: " + at(field, start));
        has_root_ = true;
        break;
      case kGraphAttr:
        append_field(field, payload);  // map entries: parsed with the Graph message at the end
        break;
      case kOpDefs:
        if (xmodel::pb::OpDef def; !def.ParseFromString(payload))
          fail("damaged: " + at(field, start) + " is not an OpDef");
        op_defs_.push_back(std::move(payload));  // kept verbatim
        break;
    }
  }

  void skip_scalar(std::uint32_t field, std::uint32_t wire, std::uint64_t start) {
    std::uint64_t v64 = 0;
    std::uint32_t v32 = 0;
    bool ok = false;
    if (wire == kWireVarint) ok = in_.ReadVarint64(&v64);
    if (wire == kWireFixed64) ok = in_.ReadLittleEndian64(&v64);
    if (wire == kWireFixed32) ok = in_.ReadLittleEndian32(&v32);
    if (!ok) broken(at(field, start) + " has wire type " + std::to_string(wire));
  }

  void add_op(std::uint64_t length, std::uint64_t start) {
    const std::string where =
        "op_node #" + std::to_string(graph_.size()) + " at byte " + std::to_string(start);
    xmodel::pb::OPNode node;
    const auto limit = in_.PushLimit(static_cast<int>(length));
    const bool parsed = node.MergeFromCodedStream(&in_) && in_.BytesUntilLimit() == 0;
    in_.PopLimit(limit);
    if (!parsed) fail("damaged: " + where + " is not an OPNode");
    Op op = named([&] { return xmodel::op_from_proto(node); });
    if (op.name.empty()) fail(where + " has no name");
    if (graph_.find(op.name) != nullptr) fail("duplicate op name '" + op.name + "'");
    graph_.add_op(std::move(op));
  }

  void append_field(std::uint32_t field, const std::string& payload) {
    pbio::StringOutputStream raw(&rest_);
    pbio::CodedOutputStream out(&raw);
    out.WriteTag((field << 3) | kWireLengthDelimited);
    out.WriteVarint32(static_cast<std::uint32_t>(payload.size()));
    out.WriteString(payload);
  }

  Graph finish() {
    if (graph_.size() == 0) fail("not an xmodel (no ops)");
    if (!has_root_)
      fail("no root subgraph (subg_root): the file is truncated or was not written by XIR");
    xmodel::pb::Graph rest;
    if (!rest.ParseFromString(rest_)) fail("damaged: graph_attr");
    graph_.set_name(std::move(name_));
    graph_.attrs() =
        named([&] { return xmodel::attrs_from_proto(*rest.mutable_graph_attr(), "graph"); });
    graph_.op_defs() = std::move(op_defs_);
    Subgraph root = named([&] { return xmodel::subgraph_from_proto(root_); });
    if (!xmodel::is_plain_root(root, graph_)) graph_.root() = std::move(root);
    named([&] { xmodel::check_structure(graph_); });
    return std::move(graph_);
  }

  pbio::CodedInputStream in_;
  std::uint64_t size_;
  std::string origin_;
  Graph graph_;
  std::string name_;
  xmodel::pb::SubGraph root_;
  bool has_root_ = false;
  bool seen_xmodel_field_ = false;
  std::vector<std::string> op_defs_;
  std::string rest_;  // graph_attr entries, parsed as one Graph message at the end
};

}  // namespace

Graph read_xmodel(const std::filesystem::path& path) {
  const std::string origin = path.string();
  const RegularFile file(path);
  check_size(file.size(), origin);
  pbio::FileInputStream stream(file.fd(), 1 << 20);
  try {
    return GraphReader(stream, file.size(), origin).read();
  } catch (const Error&) {
    // A failing disk looks like a short file to the parser; say what really happened.
    if (stream.GetErrno() != 0)
      throw Error(origin + ": read error: " + std::strerror(stream.GetErrno()));
    throw;
  }
}

Graph parse_xmodel(const std::string& bytes, const std::string& origin) {
  check_size(bytes.size(), origin);
  pbio::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  return GraphReader(stream, bytes.size(), origin).read();
}

}  // namespace dpushard
