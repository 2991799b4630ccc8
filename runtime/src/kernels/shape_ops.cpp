// Data-movement and shape ops: Flatten, Reshape, Transpose, Concat, Identity,
// Constant, Shape, Gather, Unsqueeze, Squeeze.
#include <algorithm>
#include <cstring>

#include "kernels/common.h"

namespace epprof::rt::kernels {

namespace {

std::unique_ptr<Kernel> make_identity(const Node&) {
  return make_kernel([](KernelContext& ctx) { ctx.outputs[0] = ctx.input(0); });
}

std::unique_ptr<Kernel> make_flatten(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", 1);
  return make_kernel([axis_attr](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_attr == rank ? rank : normalize_axis(axis_attr, rank);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<size_t>(d));
    ctx.outputs[0] = x.reshaped({outer, outer ? x.size() / outer : 0});
  });
}

std::unique_ptr<Kernel> make_reshape(const Node& node) {
  const bool allow_zero = node.attr_int("allowzero", 0) != 0;
  return make_kernel([allow_zero](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    Shape shape = to_int64s(ctx.input(1));
    int64_t known = 1;
    int infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allow_zero) {
        if (i >= x.rank()) fail("Reshape: 0 at position " + std::to_string(i) + " but input is " + x.description());
        shape[i] = x.dim(i);
      }
      if (shape[i] == -1) {
        if (infer >= 0) fail("Reshape: more than one -1 in " + shape_to_string(shape));
        infer = static_cast<int>(i);
      } else if (shape[i] < 0) {
        fail("Reshape: invalid dimension in " + shape_to_string(shape));
      } else {
        known *= shape[i];
      }
    }
    if (infer >= 0) {
      if (known == 0 || x.size() % known) fail("Reshape: cannot infer -1 for " + x.description() + " -> " + shape_to_string(shape));
      shape[static_cast<size_t>(infer)] = x.size() / known;
    }
    ctx.outputs[0] = x.reshaped(shape);
  });
}

template <typename T>
void transpose_impl(const T* in, const Shape& in_shape, const std::vector<int64_t>& perm, T* out) {
  const size_t r = in_shape.size();
  std::vector<int64_t> in_strides(r, 1), out_shape(r), stride(r);
  for (size_t i = r; i-- > 1;) in_strides[i - 1] = in_strides[i] * in_shape[i];
  for (size_t i = 0; i < r; ++i) {
    out_shape[i] = in_shape[static_cast<size_t>(perm[i])];
    stride[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  const int64_t n = shape_size(in_shape);
  if (n == 0) return;
  if (r == 0) { out[0] = in[0]; return; }
  std::vector<int64_t> idx(r, 0);
  const int64_t inner = out_shape[r - 1], inner_stride = stride[r - 1];
  int64_t off = 0;
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t j = 0; j < inner; ++j) out[base + j] = in[off + j * inner_stride];
    for (size_t d = r - 1; d-- > 0;) {
      off += stride[d];
      if (++idx[d] < out_shape[d]) break;
      off -= stride[d] * out_shape[d];
      idx[d] = 0;
    }
  }
}

std::unique_ptr<Kernel> make_transpose(const Node& node) {
  const std::vector<int64_t> perm_attr = node.attr_ints("perm");
  return make_kernel([perm_attr](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const size_t r = x.rank();
    std::vector<int64_t> perm = perm_attr;
    if (perm.empty())
      for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
    std::vector<bool> seen(r, false);
    if (perm.size() != r) fail("Transpose perm has " + std::to_string(perm.size()) + " entries for " + x.description());
    for (int64_t& p : perm) {
      p = normalize_axis(p, static_cast<int64_t>(r));
      if (seen[static_cast<size_t>(p)]) fail("Transpose perm is not a permutation");
      seen[static_cast<size_t>(p)] = true;
    }
    Shape os(r);
    for (size_t i = 0; i < r; ++i) os[i] = x.dim(static_cast<size_t>(perm[i]));
    Tensor out(x.dtype(), os);
    dispatch_any(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      transpose_impl(x.data<T>(), x.shape(), perm, out.mutable_data<T>());
    });
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_concat(const Node& node) {
  if (!node.has_attr("axis")) fail(node.describe() + ": attribute 'axis' is required");
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([axis_attr](KernelContext& ctx) {
    const Tensor& first = ctx.input(0);
    const int64_t rank = static_cast<int64_t>(first.rank());
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, rank));
    Shape os = first.shape();
    os[axis] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.input(i);
      if (t.dtype() != first.dtype() || t.rank() != first.rank()) fail("Concat inputs differ: " + first.description() + " and " + t.description());
      for (size_t d = 0; d < t.rank(); ++d)
        if (d != axis && t.dim(d) != first.dim(d)) fail("Concat inputs differ: " + first.description() + " and " + t.description());
      os[axis] += t.dim(axis);
    }
    Tensor out(first.dtype(), os);
    int64_t outer = 1;
    for (size_t d = 0; d < axis; ++d) outer *= os[d];
    const size_t es = element_size(first.dtype());
    int64_t inner = 1;
    for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
    char* dst = static_cast<char*>(out.raw_mutable());
    const size_t out_row = static_cast<size_t>(os[axis] * inner) * es;
    size_t col = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.input(i);
      const size_t row = static_cast<size_t>(t.dim(axis) * inner) * es;
      const char* src = static_cast<const char*>(t.raw());
      for (int64_t o = 0; o < outer; ++o)
        if (row) std::memcpy(dst + static_cast<size_t>(o) * out_row + col, src + static_cast<size_t>(o) * row, row);
      col += row;
    }
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_constant(const Node& node) {
  Tensor value;
  if (const Attribute* a = node.attr("value"); a && a->kind == Attribute::Kind::Tensor) value = a->t;
  else if (node.has_attr("value_float")) value = Tensor::scalar(node.attr_float("value_float", 0));
  else if (node.has_attr("value_int")) value = Tensor::scalar<int64_t>(node.attr_int("value_int", 0));
  else if (node.has_attr("value_floats")) {
    auto v = node.attr_floats("value_floats");
    value = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  } else if (node.has_attr("value_ints")) {
    auto v = node.attr_ints("value_ints");
    value = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  } else {
    fail(node.describe() + ": no supported value attribute (value, value_float(s), value_int(s))");
  }
  return make_kernel([value](KernelContext& ctx) { ctx.outputs[0] = value; });
}

std::unique_ptr<Kernel> make_shape(const Node& node) {
  const int64_t start_attr = node.attr_int("start", 0);
  const bool has_end = node.has_attr("end");
  const int64_t end_attr = node.attr_int("end", 0);
  return make_kernel([=](KernelContext& ctx) {
    const Shape& s = ctx.input(0).shape();
    const int64_t r = static_cast<int64_t>(s.size());
    auto clamp = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
    const int64_t b = clamp(start_attr), e = has_end ? clamp(end_attr) : r;
    std::vector<int64_t> dims;
    for (int64_t i = b; i < e; ++i) dims.push_back(s[static_cast<size_t>(i)]);
    ctx.outputs[0] = Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
  });
}

std::unique_ptr<Kernel> make_gather(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([axis_attr](KernelContext& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& idx_t = ctx.input(1);
    const std::vector<int64_t> idx = to_int64s(idx_t);
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(data.rank())));
    Shape os(data.shape().begin(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis));
    os.insert(os.end(), idx_t.shape().begin(), idx_t.shape().end());
    os.insert(os.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.shape().end());
    Tensor out(data.dtype(), os);
    const int64_t n_axis = data.dim(axis);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= data.dim(d);
    for (size_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
    const size_t es = element_size(data.dtype()), chunk = static_cast<size_t>(inner) * es;
    const char* src = static_cast<const char*>(data.raw());
    char* dst = static_cast<char*>(out.raw_mutable());
    for (int64_t o = 0; o < outer; ++o)
      for (size_t k = 0; k < idx.size(); ++k) {
        int64_t i = idx[k];
        if (i < -n_axis || i >= n_axis) fail("Gather index " + std::to_string(i) + " out of range for " + data.description());
        if (i < 0) i += n_axis;
        if (chunk)
          std::memcpy(dst + (static_cast<size_t>(o) * idx.size() + k) * chunk,
                      src + static_cast<size_t>(o * n_axis + i) * chunk, chunk);
      }
    ctx.outputs[0] = std::move(out);
  });
}

// Axes from the attribute (opset < 13) or from the optional second input.
std::vector<int64_t> axes_of(const Node& node, const KernelContext& ctx, bool& given) {
  if (node.opset < 13) {
    given = node.has_attr("axes");
    return node.attr_ints("axes");
  }
  const Tensor* t = ctx.optional_input(1);
  given = t != nullptr;
  return t ? to_int64s(*t) : std::vector<int64_t>{};
}

std::unique_ptr<Kernel> make_unsqueeze(const Node& node) {
  return make_kernel([node](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    bool given = false;
    std::vector<int64_t> axes = axes_of(node, ctx, given);
    if (axes.empty()) fail("Unsqueeze needs axes");
    const int64_t out_rank = static_cast<int64_t>(x.rank() + axes.size());
    for (int64_t& a : axes) a = normalize_axis(a, out_rank);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) fail("Unsqueeze axes repeat");
    Shape os;
    size_t in_i = 0, ax_i = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      if (ax_i < axes.size() && axes[ax_i] == d) { os.push_back(1); ++ax_i; }
      else os.push_back(x.dim(in_i++));
    }
    ctx.outputs[0] = x.reshaped(os);
  });
}

std::unique_ptr<Kernel> make_squeeze(const Node& node) {
  return make_kernel([node](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    bool given = false;
    std::vector<int64_t> axes = axes_of(node, ctx, given);
    std::vector<bool> drop(x.rank(), false);
    if (axes.empty()) {
      for (size_t d = 0; d < x.rank(); ++d) drop[d] = x.dim(d) == 1;
    } else {
      for (int64_t a : axes) {
        const size_t d = static_cast<size_t>(normalize_axis(a, static_cast<int64_t>(x.rank())));
        if (x.dim(d) != 1) fail("Squeeze axis " + std::to_string(a) + " of " + x.description() + " is not 1");
        drop[d] = true;
      }
    }
    Shape os;
    for (size_t d = 0; d < x.rank(); ++d)
      if (!drop[d]) os.push_back(x.dim(d));
    ctx.outputs[0] = x.reshaped(os);
  });
}

}  // namespace

void register_shape(std::vector<KernelDef>& t) {
  t.push_back({"Identity", 1, 17, make_identity});
  t.push_back({"Flatten", 1, 17, make_flatten});
  t.push_back({"Reshape", 5, 17, make_reshape});
  t.push_back({"Transpose", 1, 17, make_transpose});
  t.push_back({"Concat", 4, 17, make_concat});
  t.push_back({"Constant", 1, 17, make_constant});
  t.push_back({"Shape", 1, 17, make_shape});
  t.push_back({"Gather", 1, 17, make_gather});
  t.push_back({"Unsqueeze", 1, 17, make_unsqueeze});
  t.push_back({"Squeeze", 1, 17, make_squeeze});
}

}  // namespace epprof::rt::kernels
