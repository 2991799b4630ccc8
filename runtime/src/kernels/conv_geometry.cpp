#include "kernels/conv_geometry.h"

#include <algorithm>

#include "intra_op.h"

namespace epprof::rt::kernels {

int64_t conv_row_ranges(const ConvShape& cs, int64_t units, int64_t element_bytes) {
  return detail::intra_op_ranges(units, 1, cs.macs(), element_bytes * cs.data_elements());
}

WindowAttrs WindowAttrs::from_node(const Node& node) {
  WindowAttrs a;
  a.kernel = node.attr_ints("kernel_shape");
  a.strides = node.attr_ints("strides");
  a.pads = node.attr_ints("pads");
  a.dilations = node.attr_ints("dilations");
  a.auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
  a.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER")
    fail("unknown auto_pad '" + a.auto_pad + "'");
  return a;
}

Shape Window::out_spatial() const { return Shape(out + (3 - spatial), out + 3); }

Window window_dims(const WindowAttrs& a, const Shape& input, const std::vector<int64_t>& kernel) {
  const size_t n = input.size() - 2;
  Window w;
  w.spatial = n;
  for (size_t i = 0; i < 3; ++i) {
    w.in[i] = w.out[i] = w.k[i] = w.s[i] = w.d[i] = 1;
    w.pb[i] = w.pe[i] = 0;
  }
  for (size_t j = 0; j < n; ++j) {
    const size_t i = 3 - n + j;
    w.in[i] = input[2 + j];
    w.k[i] = kernel[j];
    w.s[i] = a.strides.empty() ? 1 : a.strides[j];
    w.d[i] = a.dilations.empty() ? 1 : a.dilations[j];
  }
  return w;
}

Window resolve_window(const WindowAttrs& a, const Shape& input, const std::vector<int64_t>& kernel) {
  if (input.size() < 3 || input.size() > 5)
    fail("expected an N x C x D1 [x D2 [x D3]] input, got shape " + shape_to_string(input));
  const size_t n = input.size() - 2;
  if (kernel.size() != n) fail("kernel has " + std::to_string(kernel.size()) + " dims for " + std::to_string(n) + " spatial dims");
  auto check_len = [&](const std::vector<int64_t>& v, size_t len, const char* what) {
    if (!v.empty() && v.size() != len) fail(std::string(what) + " has the wrong number of values");
  };
  check_len(a.strides, n, "strides");
  check_len(a.dilations, n, "dilations");
  check_len(a.pads, 2 * n, "pads");
  Window w = window_dims(a, input, kernel);
  for (size_t j = 0; j < n; ++j) {
    const size_t i = 3 - n + j;
    if (w.k[i] <= 0 || w.s[i] <= 0 || w.d[i] <= 0) fail("kernel, strides and dilations must be positive");
    const int64_t dk = (w.k[i] - 1) * w.d[i] + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      w.out[i] = (w.in[i] + w.s[i] - 1) / w.s[i];
      const int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * w.s[i] + dk - w.in[i]);
      w.pb[i] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[i] = total - w.pb[i];
      continue;
    }
    if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      w.pb[i] = a.pads[j];
      w.pe[i] = a.pads[j + n];
      if (w.pb[i] < 0 || w.pe[i] < 0) fail("pads must be non-negative");
    }
    const int64_t span = w.in[i] + w.pb[i] + w.pe[i] - dk;
    if (span < 0) fail("kernel is larger than the padded input " + shape_to_string(input));
    w.out[i] = (a.ceil_mode ? (span + w.s[i] - 1) / w.s[i] : span / w.s[i]) + 1;
    // A window that would start entirely in the end padding is dropped.
    if (a.ceil_mode && (w.out[i] - 1) * w.s[i] >= w.in[i] + w.pb[i]) --w.out[i];
  }
  return w;
}

}  // namespace epprof::rt::kernels

namespace epprof::rt::kernels {

ConvShape resolve_conv(const WindowAttrs& attrs, int64_t group, const Shape& x, const Shape& w, const char* op) {
  const std::string name(op);
  if (w.size() != x.size())
    fail(name + " weight " + shape_to_string(w) + " does not match the rank of input " + shape_to_string(x));
  if (x.size() < 3) fail(name + " input must be N x C x D1 [x D2 [x D3]], got " + shape_to_string(x));
  const Shape kernel(w.begin() + 2, w.end());
  if (!attrs.kernel.empty() && attrs.kernel != kernel)
    fail(name + " kernel_shape " + shape_to_string(attrs.kernel) + " disagrees with weight " + shape_to_string(w));
  ConvShape cs;
  cs.w = resolve_window(attrs, x, kernel);
  cs.N = x[0];
  cs.C = x[1];
  cs.M = w[0];
  cs.group = group;
  if (cs.C % group || cs.M % group || w[1] * group != cs.C)
    fail(name + " channels do not match: input " + shape_to_string(x) + ", weight " + shape_to_string(w) + ", group " +
         std::to_string(group));
  cs.Cg = cs.C / group;
  cs.Mg = cs.M / group;
  cs.K = cs.Cg * cs.w.k_size();
  cs.P = cs.w.out_size();
  cs.out_shape = {cs.N, cs.M};
  for (int64_t d : cs.w.out_spatial()) cs.out_shape.push_back(d);
  return cs;
}

}  // namespace epprof::rt::kernels
