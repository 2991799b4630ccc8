// What model loading checks on the protobuf before anything reads the graph
// further, in particular before libonnx's shape inference: that code divides
// by strides and indexes per-dimension attributes by the input's rank
// without checking them, so a bad attribute is a crash there, not an error.
#pragma once
#include <map>
#include <string>

#include "onnx/onnx_pb.h"

namespace epprof::rt::detail {

// The newest IR version the loader reads (IR 10: ONNX 1.16). Later ones
// may carry fields it would silently ignore.
constexpr int64_t kMaxIrVersion = 10;

// Throws Error (InvalidModel) naming the node and the problem for:
//  - a node whose input or output count is outside its ONNX schema's range
//    (default domain, at the model's opset);
//  - convolution and pooling attributes that are not positive (strides,
//    dilations, kernel_shape, group), negative pads, or per-dimension
//    attributes whose lengths disagree with each other, with the weight
//    initializer or with the input's declared rank;
//  - Transpose perms and axes attributes out of range for a declared rank.
// Subgraphs are checked too. `opsets` maps a domain ("" for the default one)
// to its imported version.
void check_graph_attributes(const onnx::GraphProto& graph, const std::map<std::string, int>& opsets);

// Prepares `model` (a copy the loader owns) for libonnx's shape inference:
// a convolution without kernel_shape gets its weight's spatial dims as
// kernel_shape, so that shape inference checks them against the input's
// rank instead of reading past its per-dimension arrays. Returns false when
// shape inference must be skipped because that cannot be done (a
// convolution whose weight is not an initializer and has no kernel_shape).
bool prepare_for_shape_inference(onnx::ModelProto& model);

}  // namespace epprof::rt::detail
