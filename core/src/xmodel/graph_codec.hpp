#pragma once
// Conversion of ops, tensors and subgraphs between the IR (graph.hpp) and the schema's
// messages. Errors name the op or subgraph; the reader and writer add the file.

#include "dpushard/graph/graph.hpp"
#include "xmodel.pb.h"

namespace dpushard::xmodel {

// Moves large values (const data, DPU code) out of the message.
Op op_from_proto(xmodel::pb::OPNode& node);
xmodel::pb::OPNode op_to_proto(const Op& op);

// Subgraph trees nest only a few levels deep (root -> device -> op groups), and protobuf's
// recursion limit bounds what a file can ask for.
Subgraph subgraph_from_proto(xmodel::pb::SubGraph& proto);
void subgraph_to_proto(const Subgraph& subgraph, xmodel::pb::SubGraph& proto);

}  // namespace dpushard::xmodel
