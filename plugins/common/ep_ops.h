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

constexpr int kMaxWindowRank = 2;     // Conv and pooling: 1-D and 2-D windows

enum class Op {
  Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Softmax, MatMul, Gemm,  // every device EP
  Conv, MaxPool, AveragePool, GlobalAveragePool, BatchNormalization, Clip, Resize,  // a CNN's
  Exp, Log, Sqrt, Neg, Abs, Erf, Reciprocal, Softplus, LeakyRelu, HardSigmoid, Elu, Pow,  // more elementwise
};

// A set of ops, one bit each: what one plugin runs.
using OpSet = uint32_t;
constexpr OpSet op_bit(Op op) { return OpSet{1} << static_cast<unsigned>(op); }
constexpr OpSet kBasicOps = (op_bit(Op::Gemm) << 1) - 1;  // Add .. Gemm
constexpr OpSet kCnnOps = op_bit(Op::Conv) | op_bit(Op::MaxPool) | op_bit(Op::AveragePool) |
                          op_bit(Op::GlobalAveragePool) | op_bit(Op::BatchNormalization) | op_bit(Op::Clip) |
                          op_bit(Op::Resize);
constexpr OpSet kMoreElementwiseOps = ((op_bit(Op::Pow) << 1) - 1) & ~((op_bit(Op::Exp)) - 1);  // Exp .. Pow

// Resize's attributes: the modes the device kernels implement.
struct ResizeAttrs {
  bool linear = false;  // else nearest
  enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric } coord = Coord::HalfPixel;
  enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil } nearest = Nearest::RoundPreferFloor;
};

// Conv and pooling attributes as the node gives them (empty: the default).
struct WindowAttrs {
  std::vector<int64_t> kernel_shape, strides, pads, dilations;
  enum class AutoPad { NotSet, SameUpper, SameLower, Valid } auto_pad = AutoPad::NotSet;
  bool ceil_mode = false;          // pools
  bool count_include_pad = false;  // AveragePool
  int64_t group = 1;               // Conv
};

// A kernel: the op and its attributes, read once at create_kernel.
struct OpKernel {
  const epprof_host_api* host = nullptr;  // for the statuses of outputs->allocate
  Op op = Op::Add;
  std::string node;  // "node 'fc1' (Gemm)", for messages
  float alpha = 1.0f, beta = 1.0f;  // Gemm; LeakyRelu, HardSigmoid, Elu with their own defaults
  bool trans_a = false, trans_b = false;
  int64_t axis = -1;
  bool legacy_softmax = false;  // opset < 13: coerce to 2-D at axis
  WindowAttrs window;           // Conv, MaxPool, AveragePool
  float epsilon = 1e-5f;        // BatchNormalization
  // Clip before opset 11: the bounds are attributes; from 11, inputs.
  bool clip_bounds_are_inputs = true;
  float clip_min = 0, clip_max = 0;
  ResizeAttrs resize;
};

// Whether the EP supports `node` (float32, an op of `supported`, ranks
// within the kernels' limits); on true, *kernel describes it. `why_not`
// says why not (for messages), when it matters.
bool parse_node(const epprof_ep_node& node, OpSet supported, OpKernel* kernel, std::string* why_not);

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

// A node whose output has input 0's shape (the unary ops): the output,
// allocated, and its element count *n. Not Ok when the output cannot be
// allocated; Ok with *n == 0 when it is empty; else Ok and *y the output.
ComputeResult prepare_elementwise(const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs,
                                  int64_t* n, float** y);

// A broadcasting binary node's output, allocated, and its kernel's
// parameters: `Params` is the device's struct of rank, n (the output's
// element count), dims and the inputs' element strides sa and sb, in its
// integer type. Not Ok when the node cannot run (shapes that do not
// broadcast, a rank above kMaxBroadcastRank); Ok with *y null (and p->n
// 0) when the output is empty; else Ok and *y the output.
template <class Params>
ComputeResult prepare_binary(const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs, Params* p,
                             float** y) {
  const Shape a = shape_of(in[0]), b = shape_of(in[1]);
  Shape out;
  if (!broadcast(a, b, &out)) return failed(ComputeResult::Kind::Failed, k.node + ": input shapes do not broadcast");
  if (out.size() > static_cast<size_t>(kMaxBroadcastRank))
    return failed(ComputeResult::Kind::Unsupported, "rank " + std::to_string(out.size()) +
                                                        " is above the EP's limit of " +
                                                        std::to_string(kMaxBroadcastRank));
  *p = Params{};
  *y = nullptr;
  float* allocated = nullptr;
  ComputeResult r = allocate(k, outputs, out, &allocated);
  if (r.kind != ComputeResult::Kind::Ok || count(out) == 0) return r;
  *y = allocated;
  p->rank = static_cast<decltype(p->rank)>(out.size());
  p->n = count(out);
  for (size_t i = 0; i < out.size(); ++i) p->dims[i] = out[i];
  broadcast_strides(a, out, p->sa);
  broadcast_strides(b, out, p->sb);
  return r;
}

// The shape work of each op, the same on every device; the plugins keep
// only the dispatch. Each returns Ok, or why the node cannot run.

// Softmax of `x` over k.axis as [outer, n, inner] rows (opset < 13: the
// input coerced to 2-D at axis, so a row is the whole tail from axis).
struct SoftmaxDims {
  int64_t outer = 1, n = 1, inner = 1;
};
ComputeResult softmax_dims(const OpKernel& k, const Shape& x, SoftmaxDims* out);
// A Softmax node ready to run: its rows, and its output allocated.
struct SoftmaxRun {
  SoftmaxDims dims;
  int64_t total = 0;  // elements; 0: nothing to compute
  float* y = nullptr;
};
ComputeResult prepare_softmax(const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs,
                              SoftmaxRun* run);

// MatMul with numpy semantics: a 1-D operand is promoted to a matrix (and
// its dim dropped from the output), batch dims broadcast.
struct MatMulDims {
  Shape a_batch, b_batch, batch;  // A's and B's batch dims, and their broadcast
  Shape out;
  int64_t m = 0, k = 0, n = 0;
  int64_t total = 0;  // elements of out
};
ComputeResult matmul_dims(const OpKernel& k, const Shape& a, const Shape& b, MatMulDims* out);
// A MatMul node ready to dispatch: its dims, its output, and where each
// batch's matrices are.
struct MatMulRun {
  MatMulDims dims;
  float* y = nullptr;  // the output; null when there is nothing to compute
  int64_t batches = 1;  // product of dims.batch
  // A's and B's stride along each of dims.batch, in whole matrices (0 where
  // the operand broadcasts).
  int64_t a_strides[kMaxBatchRank] = {}, b_strides[kMaxBatchRank] = {};
};
// Not Ok when the node cannot run; Ok with run->y null when there is
// nothing to compute (an empty output, or K = 0, whose zeros are written
// already); else Ok with the output allocated.
ComputeResult prepare_matmul(const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs,
                             MatMulRun* run);

// Gemm: Y[M,N] = alpha·op(A)·op(B) + beta·C, with C optional and
// broadcasting to [M,N] in one direction only.
struct GemmDims {
  int64_t m = 0, k = 0, n = 0;
  const epprof_ep_tensor* c = nullptr;  // the C input, or nullptr
  Shape c_shape;
  int64_t c_rows = 1, c_cols = 1;  // C's extent along M and N (1: broadcast)
};
ComputeResult gemm_dims(const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs, GemmDims* out);

// A 1-D or 2-D window op's geometry (Conv, MaxPool, AveragePool) on an
// N x C x [H x] W input, 1-D as H = 1; pads are begin/end per spatial dim.
// Conv also: its M output channels and the kernel from W (M x C/group x k).
struct WindowDims {
  int64_t n = 0, c = 0, h = 1, w = 0;   // input
  int64_t m = 0, oh = 1, ow = 0;        // output channels and spatial dims
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t group = 1;
  Shape out;                            // the output's shape, of x's rank
};
// `weights` is W's shape for Conv, null for the pools.
ComputeResult window_dims(const OpKernel& k, const Shape& x, const Shape* weights, WindowDims* out);

// Resize over the last two axes (the leading ones keep their size), as
// per-output tap tables the kernel reads: output row o reads input rows
// y_idx[o * taps + t] with weights y_w[...]; the same for columns. taps is 1
// (nearest) or 2 (linear). Inputs: X, [roi], [scales], [sizes] (opset 11+)
// or X, scales (opset 10); other resizes are UNSUPPORTED.
struct ResizePlan {
  Shape out;
  int64_t planes = 0, ih = 0, iw = 0, oh = 0, ow = 0, taps = 1;
  std::vector<int64_t> y_idx, x_idx;
  std::vector<float> y_w, x_w;
};
ComputeResult resize_plan(const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs, ResizePlan* out);

// The create_kernel slot: a new OpKernel for `node` into *out_kernel when
// it is among `supported`, or UNSUPPORTED naming the node; `who` prefixes
// messages ("opencl EP: ").
epprof_status* create_kernel(const epprof_host_api* host, const char* who, OpSet supported,
                             const epprof_ep_node& node, void** out_kernel);
// The release_kernel slot.
void release_kernel(void* kernel);

}  // namespace epprof::ep_common
