// The runtime's cost model: floating-point operations and bytes moved by one
// execution of a node, computed from its op type, attributes and the actual
// shapes of its inputs and outputs. The host hands these to libepprof as the
// `flops` and `bytes` derived counters (epprof_dispatch_measures);
// libepprof itself knows nothing about ONNX.
//
// Formulas (numel = number of elements; a multiply-add counts 2):
//   bytes       every op: sum of the byte sizes of its present inputs plus its
//               outputs (the data the kernel must read and write once).
//   MatMul      A[..., M, K] x B[..., K, N] -> Y[..., M, N]:
//               flops = 2 * K * numel(Y)  (K = last dim of A; broadcasting and
//               1-D operands included, since Y's shape carries them).
//   Gemm        Y[M, N] = alpha * op(A)[M, K] * op(B)[K, N] + beta * C:
//               flops = 2*M*N*K, + M*N when alpha != 1, + M*N for adding C
//               (C present and beta != 0), + M*N more when also beta != 1.
//   Conv        Y[N, M, out...], W[M, C/group, k...]:
//               flops = 2 * numel(Y) * (C/group) * prod(k), + numel(Y) with a bias.
//   elementwise Add, Sub, Mul, Div, Pow: 1 per output element (after
//               broadcasting). Relu, LeakyRelu, Sigmoid, Tanh, Exp, Log, Sqrt,
//               Erf: 1 per output element (a transcendental counts as one).
//   data movement (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose,
//               Concat, Gather, Shape, Cast, Constant): 0 flops.
// `flops_exact` is true for the ops above; other ops (pooling,
// normalisation, softmax, reductions) get an estimate of one flop per input
// element and flops_exact = false.
#pragma once

#include <vector>

#include "epprof/rt/graph.h"
#include "epprof/rt/observer.h"
#include "epprof/rt/tensor.h"

namespace epprof::rt {

struct NodeCost {
  double flops = 0.0;
  double bytes = 0.0;
  bool flops_exact = false;  // false: flops is an estimate (see above)
};

// `inputs` holds nullptr for omitted optional inputs. Throws nothing for a
// node whose shapes do not match its op (the cost is then estimated).
NodeCost node_cost(const Node& node, const std::vector<const Tensor*>& inputs,
                   const std::vector<Tensor>& outputs);

// The same from an observer's NodeIo.
NodeCost node_cost(const Node& node, const NodeIo& io);

}  // namespace epprof::rt
