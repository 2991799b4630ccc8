// The node fusions ONNX Runtime makes at its default optimisation level
// for a CNN, made to the loaded model before its kernels are created, so
// that a profile spends its time as the deployment does:
// - Conv + BatchNormalization: the normalisation folded into the Conv's
//   weights and bias (new initializers), for any EP: the Conv stays a Conv.
// - Conv [+ Add] [+ Relu | Clip | LeakyRelu | Sigmoid | Tanh | HardSigmoid]:
//   one com.microsoft FusedConv, ONNX Runtime's contrib op (Y =
//   activation(Conv(X, W, B) + Z)), where the CPU EP runs all of them: an
//   EP that claims one of the nodes keeps them.
// The fused node keeps the Conv's name; the nodes it absorbed are gone from
// the model (and the trace), as in ONNX Runtime's. SessionOptions::fuse_nodes
// turns it off.
#pragma once

#include <functional>
#include <string>

#include "epprof/rt/graph.h"
#include "epprof/rt/session.h"
#include "model.h"

namespace epprof::rt::detail {

// Fuses what it can in `m`'s top-level graph and renumbers its nodes
// (Node::index stays the position); returns what it fused. `cpu_runs(node)`:
// the CPU EP is the first provider that claims `node`. Never throws for a
// node it cannot fuse: it leaves it as it is.
Session::Fusions fuse_nodes(Model& m, const std::function<bool(const Node&)>& cpu_runs);

}  // namespace epprof::rt::detail
