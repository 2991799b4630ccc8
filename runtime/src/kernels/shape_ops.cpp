// Data-movement and shape ops: Flatten, Reshape, Transpose, Concat, Identity,
// Constant, Shape, Gather, Unsqueeze, Squeeze.
#include <algorithm>
#include <cstring>

#include "kernels/common.h"
#include "kernels/indexing_util.h"

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

// allowzero (14+): a 0 in the shape is a real zero dim instead of "copy the input's dim".
std::unique_ptr<Kernel> make_reshape(const Node& node) {
  const bool allow_zero = node.opset >= 14 && node.attr_int("allowzero", 0) != 0;
  return make_kernel([allow_zero](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (ctx.input(1).rank() != 1) fail("Reshape shape must be a 1-D tensor, got " + ctx.input(1).description());
    Shape shape = read_indices(ctx.input(1), "input 'shape'");
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
      if (known == 0 || x.size() % known != 0) fail("Reshape: cannot infer -1 for " + x.description() + " -> " + shape_to_string(shape));
      shape[static_cast<size_t>(infer)] = x.size() / known;
    }
    ctx.outputs[0] = x.reshaped(std::move(shape));
  });
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
    if (perm.size() != r) fail("attribute 'perm' has " + std::to_string(perm.size()) + " entries for " + x.description());
    for (int64_t& p : perm) {
      p = normalize_axis(p, static_cast<int64_t>(r));
      if (seen[static_cast<size_t>(p)]) fail("attribute 'perm' " + shape_to_string(perm_attr) + " is not a permutation");
      seen[static_cast<size_t>(p)] = true;
    }
    // Output dim i walks input dim perm[i]: a strided view with permuted strides.
    const std::vector<int64_t> in_stride = strides_of(x.shape());
    Shape os(r);
    std::vector<int64_t> stride(r);
    for (size_t i = 0; i < r; ++i) {
      os[i] = x.dim(static_cast<size_t>(perm[i]));
      stride[i] = in_stride[static_cast<size_t>(perm[i])];
    }
    ctx.outputs[0] = strided_view(x, 0, os, stride);
  });
}

std::unique_ptr<Kernel> make_concat(const Node& node) {
  if (!node.has_attr("axis")) fail(node.describe() + ": attribute 'axis' is required");
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([axis_attr](KernelContext& ctx) {
    if (ctx.num_inputs() == 0) fail("Concat needs at least one input");
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
    Tensor out = Tensor::uninitialized(first.dtype(), os);  // the inputs' rows cover every output row
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
  if (node.attributes.size() != 1)
    fail(node.describe() + ": exactly one value attribute must be set, got " + std::to_string(node.attributes.size()));
  if (node.has_attr("value_string") || node.has_attr("value_strings"))
    fail(node.describe() + ": string tensors are not supported");
  if (node.has_attr("sparse_value")) fail(node.describe() + ": sparse tensors are not supported");
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
    fail(node.describe() + ": attribute '" + node.attributes.begin()->first +
         "' is not a value attribute (value, value_float(s), value_int(s))");
  }
  return make_kernel([value](KernelContext& ctx) { ctx.outputs[0] = value; });
}

// start/end (15+) select a clamped range of dims, negative values counting from the end.
std::unique_ptr<Kernel> make_shape(const Node& node) {
  const int64_t start_attr = node.opset >= 15 ? node.attr_int("start", 0) : 0;
  const bool has_end = node.opset >= 15 && node.has_attr("end");
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
    std::vector<int64_t> idx = read_indices(idx_t, "input 'indices'");
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(data.rank())));
    const int64_t n_axis = data.dim(axis);
    for (int64_t& i : idx) i = wrap_index(i, n_axis, "Gather index");
    Shape os(data.shape().begin(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis));
    os.insert(os.end(), idx_t.shape().begin(), idx_t.shape().end());
    os.insert(os.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.shape().end());
    Tensor out(data.dtype(), os);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= data.dim(d);
    for (size_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
    const size_t es = element_size(data.dtype()), chunk = static_cast<size_t>(inner) * es;
    const char* src = static_cast<const char*>(data.raw());
    char* dst = static_cast<char*>(out.raw_mutable());
    for (int64_t o = 0; o < outer; ++o)
      for (size_t k = 0; k < idx.size(); ++k)
        if (chunk)
          std::memcpy(dst + (static_cast<size_t>(o) * idx.size() + k) * chunk,
                      src + static_cast<size_t>(o * n_axis + idx[k]) * chunk, chunk);
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
  return t ? read_indices(*t, "input 'axes'") : std::vector<int64_t>{};
}

std::unique_ptr<Kernel> make_unsqueeze(const Node& node) {
  return make_kernel([node](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    bool given = false;
    std::vector<int64_t> axes = axes_of(node, ctx, given);
    if (axes.empty()) fail(node.opset < 13 ? "attribute 'axes' is required" : "input 'axes' is required");
    const int64_t out_rank = static_cast<int64_t>(x.rank() + axes.size());
    for (int64_t& a : axes) a = normalize_axis(a, out_rank);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) fail("Unsqueeze axes repeat");
    Shape os;
    os.reserve(static_cast<size_t>(out_rank));
    size_t in_i = 0, ax_i = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      if (ax_i < axes.size() && axes[ax_i] == d) { os.push_back(1); ++ax_i; }
      else os.push_back(x.dim(in_i++));
    }
    ctx.outputs[0] = x.reshaped(std::move(os));
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
    os.reserve(x.rank());
    for (size_t d = 0; d < x.rank(); ++d)
      if (!drop[d]) os.push_back(x.dim(d));
    ctx.outputs[0] = x.reshaped(std::move(os));
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
