#pragma once
// Conversion between dpushard::AttrValue and the schema's xmodel::pb::AttrValue. The
// variant's alternative index is the oneof field number minus 4, so every kind maps 1:1.

#include <google/protobuf/map.h>

#include <string>

#include "dpushard/graph/attr.hpp"
#include "xmodel.pb.h"

namespace dpushard::xmodel {

using ProtoAttrMap = google::protobuf::Map<std::string, xmodel::pb::AttrValue>;

// Moves the value out of `proto` (a const's weights can be a gigabyte). Throws
// dpushard::Error naming `owner` and `key` when no known kind is set, e.g. an AttrValue
// written by a newer XIR with a field this schema does not know.
AttrValue attr_from_proto(xmodel::pb::AttrValue& proto, const std::string& owner,
                          const std::string& key);
AttrMap attrs_from_proto(ProtoAttrMap& proto, const std::string& owner);

void attr_to_proto(const AttrValue& value, xmodel::pb::AttrValue& proto);
void attrs_to_proto(const AttrMap& attrs, ProtoAttrMap& proto);

}  // namespace dpushard::xmodel
