#include "kernels/common.h"

#include <algorithm>

#include "kernels/broadcast.h"

namespace epprof::rt::kernels {

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> to_int64s(const Tensor& t) {
  if (t.dtype() == DataType::Int64) return t.to_vector<int64_t>();
  if (t.dtype() == DataType::Int32) {
    auto v = t.to_vector<int32_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  }
  fail(std::string("expected an int64 tensor, got ") + t.description());
}

void require_type(const Tensor& t, DataType type, const char* what) {
  if (t.dtype() != type)
    fail(std::string(what) + " must be " + type_name(type) + ", got " + t.description());
}

void require_float(const Tensor& t, const char* what) { require_type(t, DataType::Float, what); }

ChannelShape channel_shape(const Tensor& x, const std::string& what, const char* input) {
  if (x.rank() < 2) fail(what + ": " + input + " must have rank >= 2 ([N, C, ...]), got " + x.description());
  const int64_t N = x.dim(0), C = x.dim(1);
  return {N, C, N * C != 0 ? x.size() / (N * C) : 0};
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("shapes " + shape_to_string(a) + " and " + shape_to_string(b) + " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t i = in.size() - 1 - k;
    const size_t o = out.size() - 1 - k;
    s[o] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return s;
}

const std::vector<KernelDef>& cpu_kernel_table() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> t;
    register_elementwise(t);
    register_linalg(t);
    register_nn(t);
    register_conv(t);
    register_pool(t);
    register_shape(t);
    register_cast(t);
    register_unary(t);
    register_logical(t);
    register_indexing(t);
    register_tensor_ops(t);
    register_reductions(t);
    register_normalization(t);
    register_loss(t);
    register_einsum(t);
    register_conv_transpose(t);
    register_resize(t);
    register_quantized(t);
    register_sampling(t);
    register_rnn(t);
    register_signal(t);
    register_control_flow(t);
    register_sequence(t);
    register_text(t);
    return t;
  }();
  return table;
}

}  // namespace epprof::rt::kernels
