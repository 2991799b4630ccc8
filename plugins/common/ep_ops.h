// What the device EP plugins (OpenCL, CUDA) share: which nodes they claim
// and the attributes of each op, numpy broadcasting, and writing outputs
// through the host. Each plugin adds its own dispatch (copies in, kernels,
// copy out). A static library linked into each plugin; not part of any ABI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "epprof/ep_plugin.h"

namespace epprof::ep_common {

constexpr int kMaxBroadcastRank = 6;  // elementwise ops: output rank limit of the kernels
constexpr int kMaxBatchRank = 4;      // MatMul batch dims (operands of rank <= 6)

enum class Op { Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Softmax, MatMul, Gemm };

// A kernel: the op and its attributes, read once at create_kernel.
struct OpKernel {
  const epprof_host_api* host = nullptr;  // for the statuses of outputs->allocate
  Op op = Op::Add;
  std::string node;  // "node 'fc1' (Gemm)", for messages
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
  int64_t axis = -1;
  bool legacy_softmax = false;  // opset < 13: coerce to 2-D at axis
};

// Whether the EP supports `node` (float32, the ops above, ranks within the
// kernels' limits); on true, *kernel describes it. `why_not` says why not
// (for messages), when it matters.
bool parse_node(const epprof_ep_node& node, OpKernel* kernel, std::string* why_not);

struct ComputeResult {
  enum class Kind { Ok, OutOfMemory, Unsupported, Failed } kind = Kind::Ok;
  std::string message;
};
inline ComputeResult failed(ComputeResult::Kind kind, const std::string& msg) { return ComputeResult{kind, msg}; }

// The status a compute slot returns for `r` (NULL for Ok), its message
// prefixed with `who` ("opencl EP: ").
epprof_status* to_status(const epprof_host_api* host, const char* who, const ComputeResult& r);

using Shape = std::vector<int64_t>;
Shape shape_of(const epprof_ep_tensor& t);
int64_t count(const Shape& s);
inline size_t bytes_of(int64_t elements) { return static_cast<size_t>(elements) * sizeof(float); }

// numpy broadcasting; false if the shapes are incompatible.
bool broadcast(const Shape& a, const Shape& b, Shape* out);

// Element strides of `s` aligned right to `out` (0 on broadcast dims), in
// the integer type of the device's kernel parameters.
template <class Int>
void broadcast_strides(const Shape& s, const Shape& out, Int* strides) {
  int64_t stride = 1;
  for (size_t i = out.size(); i-- > 0;) {
    const size_t back = out.size() - 1 - i;
    if (back < s.size()) {
      const int64_t d = s[s.size() - 1 - back];
      strides[i] = d == 1 ? 0 : static_cast<Int>(stride);
      stride *= d;
    } else {
      strides[i] = 0;
    }
  }
}

// Allocates output 0 with `shape` through the host; *data is its buffer.
ComputeResult allocate(const OpKernel& k, epprof_ep_outputs* outputs, const Shape& shape, float** data);

// The shape work of each op, the same on every device; the plugins keep
// only the dispatch. Each returns Ok, or why the node cannot run.

// Softmax of `x` over k.axis as [outer, n, inner] rows (opset < 13: the
// input coerced to 2-D at axis, so a row is the whole tail from axis).
struct SoftmaxDims {
  int64_t outer = 1, n = 1, inner = 1;
};
ComputeResult softmax_dims(const OpKernel& k, const Shape& x, SoftmaxDims* out);

// MatMul with numpy semantics: a 1-D operand is promoted to a matrix (and
// its dim dropped from the output), batch dims broadcast.
struct MatMulDims {
  Shape a_batch, b_batch, batch;  // A's and B's batch dims, and their broadcast
  Shape out;
  int64_t m = 0, k = 0, n = 0;
};
ComputeResult matmul_dims(const OpKernel& k, const Shape& a, const Shape& b, MatMulDims* out);

// Gemm: Y[M,N] = alpha·op(A)·op(B) + beta·C, with C optional and
// broadcasting to [M,N] in one direction only.
struct GemmDims {
  int64_t m = 0, k = 0, n = 0;
  const epprof_ep_tensor* c = nullptr;  // the C input, or nullptr
  Shape c_shape;
  int64_t c_rows = 1, c_cols = 1;  // C's extent along M and N (1: broadcast)
};
ComputeResult gemm_dims(const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs, GemmDims* out);

// The create_kernel slot: a new OpKernel for `node` into *out_kernel, or
// UNSUPPORTED naming the node; `who` prefixes messages ("opencl EP: ").
epprof_status* create_kernel(const epprof_host_api* host, const char* who, const epprof_ep_node& node,
                             void** out_kernel);
// The release_kernel slot.
void release_kernel(void* kernel);

}  // namespace epprof::ep_common
