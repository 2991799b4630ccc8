#include "ep_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <utility>

namespace epprof::ep_common {

namespace {

using Kind = ComputeResult::Kind;

struct OpInfo {
  const char* type;
  Op op;
  int min_opset;  // the first opset with today's semantics (broadcasting, optional C, ...)
  size_t min_inputs, max_inputs;
};

constexpr OpInfo kOps[] = {
    {"Add", Op::Add, 7, 2, 2},
    {"Sub", Op::Sub, 7, 2, 2},
    {"Mul", Op::Mul, 7, 2, 2},
    {"Div", Op::Div, 7, 2, 2},
    {"Relu", Op::Relu, 6, 1, 1},
    {"Sigmoid", Op::Sigmoid, 6, 1, 1},
    {"Tanh", Op::Tanh, 6, 1, 1},
    {"Softmax", Op::Softmax, 1, 1, 1},
    {"MatMul", Op::MatMul, 1, 2, 2},
    {"Gemm", Op::Gemm, 7, 2, 3},
    {"Conv", Op::Conv, 1, 2, 3},
    {"MaxPool", Op::MaxPool, 1, 1, 1},
    {"AveragePool", Op::AveragePool, 7, 1, 1},  // 7: count_include_pad
    {"GlobalAveragePool", Op::GlobalAveragePool, 1, 1, 1},
    {"BatchNormalization", Op::BatchNormalization, 7, 5, 5},
    {"Clip", Op::Clip, 6, 1, 3},
    {"Resize", Op::Resize, 11, 1, 4},  // 10: legacy rounding, left to the CPU EP
    {"Exp", Op::Exp, 6, 1, 1},
    {"Log", Op::Log, 6, 1, 1},
    {"Sqrt", Op::Sqrt, 6, 1, 1},
    {"Neg", Op::Neg, 6, 1, 1},
    {"Abs", Op::Abs, 6, 1, 1},
    {"Erf", Op::Erf, 9, 1, 1},
    {"Reciprocal", Op::Reciprocal, 6, 1, 1},
    {"Softplus", Op::Softplus, 1, 1, 1},
    {"LeakyRelu", Op::LeakyRelu, 6, 1, 1},
    {"HardSigmoid", Op::HardSigmoid, 6, 1, 1},
    {"Elu", Op::Elu, 6, 1, 1},
    {"Pow", Op::Pow, 7, 2, 2},
};

const epprof_ep_attribute* find_attr(const epprof_ep_node& n, const char* name) {
  for (size_t i = 0; i < n.num_attributes; ++i)
    if (std::strcmp(n.attributes[i].name, name) == 0) return &n.attributes[i];
  return nullptr;
}
int64_t attr_int(const epprof_ep_node& n, const char* name, int64_t fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type == EPPROF_EP_ATTR_INT ? a->i : fallback;
}
float attr_float(const epprof_ep_node& n, const char* name, float fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type == EPPROF_EP_ATTR_FLOAT ? a->f : fallback;
}
std::vector<int64_t> attr_ints(const epprof_ep_node& n, const char* name) {
  const auto* a = find_attr(n, name);
  return a && a->type == EPPROF_EP_ATTR_INTS && a->count > 0 ? std::vector<int64_t>(a->ints, a->ints + a->count)
                                                            : std::vector<int64_t>{};
}
const char* attr_string(const epprof_ep_node& n, const char* name, const char* fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type == EPPROF_EP_ATTR_STRING && a->s ? a->s : fallback;
}
// A string attribute (`fallback` when absent) as one of `choices`' values
// into *out; false when it names none of them.
template <typename E>
bool attr_choice(const epprof_ep_node& n, const char* name, const char* fallback,
                 std::initializer_list<std::pair<const char*, E>> choices, E* out) {
  const char* v = attr_string(n, name, fallback);
  for (const auto& [text, value] : choices)
    if (std::strcmp(v, text) == 0) return *out = value, true;
  return false;
}

// Conv's and the pools' attributes, if the kernels run them for an input of
// `rank` (-1: unknown). Anything else is left to the next EP, whose errors
// name the problem.
bool parse_window(const epprof_ep_node& n, Op op, int32_t rank, WindowAttrs* w) {
  if (rank != 3 && rank != 4) return false;  // 1-D and 2-D windows only, rank known
  const size_t spatial = static_cast<size_t>(rank) - 2;
  w->kernel_shape = attr_ints(n, "kernel_shape");
  w->strides = attr_ints(n, "strides");
  w->pads = attr_ints(n, "pads");
  w->dilations = attr_ints(n, "dilations");
  const bool conv = op == Op::Conv;
  if (!conv && w->kernel_shape.size() != spatial) return false;  // required for the pools
  // Values beyond kMaxWindow (no real model's) are left to the CPU EP, so
  // that the geometry's products cannot overflow here.
  constexpr int64_t kMaxWindow = int64_t(1) << 24;
  auto fits = [](const std::vector<int64_t>& v, size_t len, int64_t min) {
    return v.empty() || (v.size() == len && std::all_of(v.begin(), v.end(), [min](int64_t x) {
                           return x >= min && x <= kMaxWindow;
                         }));
  };
  if (!fits(w->kernel_shape, spatial, 1) || !fits(w->strides, spatial, 1) || !fits(w->dilations, spatial, 1) ||
      !fits(w->pads, 2 * spatial, 0))
    return false;
  if (op == Op::AveragePool && !w->dilations.empty()) return false;  // opset 19's
  using P = WindowAttrs::AutoPad;
  if (!attr_choice(n, "auto_pad", "NOTSET",
                   {{"NOTSET", P::NotSet}, {"", P::NotSet}, {"SAME_UPPER", P::SameUpper}, {"SAME_LOWER", P::SameLower},
                    {"VALID", P::Valid}},
                   &w->auto_pad))
    return false;
  w->ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
  w->count_include_pad = attr_int(n, "count_include_pad", 0) != 0;
  w->group = attr_int(n, "group", 1);
  if (w->group < 1) return false;
  if (conv) {  // W: M x C/group x kernel, of X's rank when known
    const epprof_ep_tensor& wt = n.inputs[1];
    if (wt.rank >= 0 && wt.rank != rank) return false;
  }
  return true;
}

// Resize's modes, if the kernels implement them (nearest and linear, the
// usual coordinate transforms, no exclude_outside).
bool parse_resize(const epprof_ep_node& n, ResizeAttrs* r) {
  using C = ResizeAttrs::Coord;
  using N = ResizeAttrs::Nearest;
  return attr_choice(n, "mode", "nearest", {{"nearest", false}, {"linear", true}}, &r->linear) &&
         attr_choice(n, "coordinate_transformation_mode", "half_pixel",
                     {{"half_pixel", C::HalfPixel}, {"pytorch_half_pixel", C::PytorchHalfPixel},
                      {"align_corners", C::AlignCorners}, {"asymmetric", C::Asymmetric}},
                     &r->coord) &&
         attr_choice(n, "nearest_mode", "round_prefer_floor",
                     {{"round_prefer_floor", N::RoundPreferFloor}, {"round_prefer_ceil", N::RoundPreferCeil},
                      {"floor", N::Floor}, {"ceil", N::Ceil}},
                     &r->nearest) &&
         attr_int(n, "exclude_outside", 0) == 0;
}

// One axis's taps, as ONNX's reference computes them: the output
// coordinate mapped back to the input, then rounded (nearest) or split
// between its two neighbours (linear), indices clamped to the input.
void resize_axis(const ResizeAttrs& a, int64_t in, int64_t out, double scale, std::vector<int64_t>* idx,
                 std::vector<float>* w) {
  const int64_t taps = a.linear ? 2 : 1;
  const double resized = static_cast<double>(in) * scale, last = static_cast<double>(in - 1);
  idx->resize(static_cast<size_t>(out * taps));
  w->resize(idx->size());
  for (int64_t o = 0; o < out; ++o) {
    const double xo = static_cast<double>(o);
    double x = 0;
    switch (a.coord) {
      case ResizeAttrs::Coord::HalfPixel: x = (xo + 0.5) / scale - 0.5; break;
      case ResizeAttrs::Coord::PytorchHalfPixel: x = resized > 1 ? (xo + 0.5) / scale - 0.5 : -0.5; break;
      case ResizeAttrs::Coord::AlignCorners: x = resized == 1 ? 0.0 : xo * last / (resized - 1); break;
      case ResizeAttrs::Coord::Asymmetric: x = xo / scale; break;
    }
    x = std::max(-4.0, std::min(x, static_cast<double>(in) + 3.0));  // beyond: every tap is an edge
    const double fl = std::floor(x), ratio = x - fl;
    const auto base = static_cast<int64_t>(fl);
    const auto clamp = [in](int64_t i) { return std::max<int64_t>(0, std::min(i, in - 1)); };
    int64_t* ix = idx->data() + o * taps;
    float* wx = w->data() + o * taps;
    if (!a.linear) {
      bool up = false;
      if (ratio != 0.0) switch (a.nearest) {
          case ResizeAttrs::Nearest::RoundPreferFloor: up = ratio > 0.5; break;
          case ResizeAttrs::Nearest::RoundPreferCeil: up = ratio >= 0.5; break;
          case ResizeAttrs::Nearest::Floor: up = false; break;
          case ResizeAttrs::Nearest::Ceil: up = true; break;
        }
      ix[0] = clamp(base + (up ? 1 : 0));
      wx[0] = 1.0f;
    } else {
      ix[0] = clamp(base);
      ix[1] = clamp(base + 1);
      wx[0] = static_cast<float>(1.0 - ratio);
      wx[1] = static_cast<float>(ratio);
    }
  }
}

}  // namespace

Shape shape_of(const epprof_ep_tensor& t) { return t.rank > 0 ? Shape(t.dims, t.dims + t.rank) : Shape{}; }
int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// numpy broadcasting; false if the shapes are incompatible.
bool broadcast(const Shape& a, const Shape& b, Shape* out) {
  const size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}


// Allocates output 0 with `shape`; *data is its host buffer.
ComputeResult prepare_elementwise(const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs,
                                  int64_t* n, float** y) {
  const Shape x = shape_of(in[0]);
  *n = 0;
  ComputeResult r = allocate(k, outputs, x, y);
  if (r.kind == Kind::Ok) *n = count(x);
  return r;
}

ComputeResult prepare_softmax(const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs,
                              SoftmaxRun* run) {
  ComputeResult r = prepare_elementwise(k, in, outputs, &run->total, &run->y);
  if (r.kind != Kind::Ok || run->total == 0) return r;
  return softmax_dims(k, shape_of(in[0]), &run->dims);
}

ComputeResult allocate(const OpKernel& k, epprof_ep_outputs* outputs, const Shape& shape, float** data) {
  void* p = nullptr;
  epprof_status* st = outputs->allocate(outputs, 0, EPPROF_EP_DTYPE_FLOAT, shape.empty() ? nullptr : shape.data(),
                                        static_cast<int32_t>(shape.size()), &p);
  if (st) {
    // The status is ours: keep its message, release it.
    ComputeResult r = failed(Kind::Failed, "the host could not allocate the output of " + k.node + ": " +
                                               k.host->status_get_message(st));
    k.host->status_release(st);
    return r;
  }
  *data = static_cast<float*>(p);
  return {};
}

bool parse_node(const epprof_ep_node& n, OpSet supported, OpKernel* k, std::string* why_not) {
  if (n.domain[0] != '\0' || n.num_outputs != 1) return false;
  const OpInfo* info = nullptr;
  for (const auto& o : kOps)
    if (std::strcmp(o.type, n.op_type) == 0) info = &o;
  if (!info || !(supported & op_bit(info->op)) || n.opset < info->min_opset || n.num_inputs < info->min_inputs ||
      n.num_inputs > info->max_inputs)
    return false;
  for (size_t i = 0; i < n.num_inputs; ++i) {
    const epprof_ep_tensor& t = n.inputs[i];
    const bool omitted = i >= info->min_inputs && t.dtype == EPPROF_EP_DTYPE_UNDEFINED && t.rank == 0;
    const int32_t want = info->op == Op::Resize && i == 3 ? EPPROF_EP_DTYPE_INT64 : EPPROF_EP_DTYPE_FLOAT;  // sizes
    if (!omitted && t.dtype != want) {
      *why_not = "input " + std::to_string(i) + " is not known to be " +
                 (want == EPPROF_EP_DTYPE_INT64 ? "int64" : "float32");
      return false;
    }
  }
  const int32_t r0 = n.inputs[0].rank, r1 = n.num_inputs > 1 ? n.inputs[1].rank : 0;
  switch (info->op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow:
      if (r0 > kMaxBroadcastRank || r1 > kMaxBroadcastRank) return false;
      break;
    case Op::MatMul:
      if (r0 == 0 || r1 == 0 || r0 > kMaxBatchRank + 2 || r1 > kMaxBatchRank + 2) return false;
      break;
    case Op::Gemm:
      if ((r0 >= 0 && r0 != 2) || (r1 >= 0 && r1 != 2)) return false;
      if (n.num_inputs > 2 && n.inputs[2].rank > 2) return false;
      break;
    case Op::Conv: case Op::MaxPool: case Op::AveragePool:
      if (!parse_window(n, info->op, r0, &k->window)) return false;
      break;
    case Op::GlobalAveragePool:
      if (r0 < 3) return false;  // N x C x spatial..., rank known
      break;
    case Op::BatchNormalization:
      if (r0 < 2) return false;  // N x C x ..., rank known
      if (attr_int(n, "spatial", 1) != 1 || attr_int(n, "training_mode", 0) != 0) return false;
      for (size_t i = 1; i < 5; ++i)
        if (n.inputs[i].rank > 1) return false;
      break;
    case Op::Resize:
      if (r0 < 2 || !parse_resize(n, &k->resize)) return false;
      break;
    case Op::Clip:
      if (n.opset < 11 && n.num_inputs != 1) return false;
      for (size_t i = 1; i < n.num_inputs; ++i)
        if (n.inputs[i].rank > 1) return false;  // scalar bounds
      break;
    default: break;
  }
  k->op = info->op;
  k->node = std::string("node '") + n.name + "' (" + n.op_type + ")";
  const float default_alpha = info->op == Op::LeakyRelu ? 0.01f : info->op == Op::HardSigmoid ? 0.2f : 1.0f;
  k->alpha = attr_float(n, "alpha", default_alpha);
  k->beta = attr_float(n, "beta", info->op == Op::HardSigmoid ? 0.5f : 1.0f);
  k->trans_a = attr_int(n, "transA", 0) != 0;
  k->trans_b = attr_int(n, "transB", 0) != 0;
  k->legacy_softmax = n.opset < 13;
  k->axis = attr_int(n, "axis", k->legacy_softmax ? 1 : -1);
  k->epsilon = attr_float(n, "epsilon", 1e-5f);
  k->clip_bounds_are_inputs = n.opset >= 11;
  k->clip_min = attr_float(n, "min", -std::numeric_limits<float>::max());
  k->clip_max = attr_float(n, "max", std::numeric_limits<float>::max());
  return true;
}

ComputeResult window_dims(const OpKernel& k, const Shape& x, const Shape* weights, WindowDims* out) {
  const WindowAttrs& a = k.window;
  if (x.size() != 3 && x.size() != 4)
    return failed(Kind::Unsupported, k.node + ": only 1-D and 2-D windows run on the device");
  const size_t spatial = x.size() - 2;
  Shape kernel = a.kernel_shape;
  WindowDims& d = *out;
  d = WindowDims{};
  d.n = x[0];
  d.c = x[1];
  d.m = d.c;
  if (weights) {
    const Shape& w = *weights;
    if (w.size() != x.size()) return failed(Kind::Failed, k.node + ": W's rank differs from X's");
    const Shape from_w(w.begin() + 2, w.end());
    if (!kernel.empty() && kernel != from_w) return failed(Kind::Failed, k.node + ": kernel_shape disagrees with W");
    kernel = from_w;
    if (d.c % a.group || w[0] % a.group || w[1] * a.group != d.c)
      return failed(Kind::Failed, k.node + ": channels of X and W do not match for group " + std::to_string(a.group));
    d.m = w[0];
    d.group = a.group;
  }
  // Per spatial dim, right-aligned into (h, w): a 1-D window is 1 x w.
  int64_t in[2] = {1, 1}, ks[2] = {1, 1}, st[2] = {1, 1}, di[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0},
          o[2] = {1, 1};
  for (size_t j = 0; j < spatial; ++j) {
    const size_t i = 2 - spatial + j;
    in[i] = x[2 + j];
    ks[i] = kernel[j];
    st[i] = a.strides.empty() ? 1 : a.strides[j];
    di[i] = a.dilations.empty() ? 1 : a.dilations[j];
    if (ks[i] < 1) return failed(Kind::Failed, k.node + ": kernel dims must be positive");
    const int64_t ek = (ks[i] - 1) * di[i] + 1;
    using AutoPad = WindowAttrs::AutoPad;
    if (a.auto_pad == AutoPad::SameUpper || a.auto_pad == AutoPad::SameLower) {
      o[i] = (in[i] + st[i] - 1) / st[i];
      const int64_t total = std::max<int64_t>(0, (o[i] - 1) * st[i] + ek - in[i]);
      pb[i] = a.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
      continue;
    }
    if (a.auto_pad == AutoPad::NotSet && !a.pads.empty()) {
      pb[i] = a.pads[j];
      pe[i] = a.pads[j + spatial];
    }
    const int64_t span = in[i] + pb[i] + pe[i] - ek;
    if (span < 0) return failed(Kind::Failed, k.node + ": the kernel is larger than the padded input");
    o[i] = (a.ceil_mode ? (span + st[i] - 1) / st[i] : span / st[i]) + 1;
    // A window that would start entirely in the end padding is dropped.
    if (a.ceil_mode && (o[i] - 1) * st[i] >= in[i] + pb[i]) --o[i];
  }
  d.h = in[0], d.w = in[1], d.kh = ks[0], d.kw = ks[1], d.sh = st[0], d.sw = st[1], d.dh = di[0], d.dw = di[1];
  d.pad_top = pb[0], d.pad_left = pb[1], d.pad_bottom = pe[0], d.pad_right = pe[1], d.oh = o[0], d.ow = o[1];
  d.out = {d.n, d.m};
  if (spatial == 2) d.out.push_back(d.oh);
  d.out.push_back(d.ow);
  return {};
}

ComputeResult softmax_dims(const OpKernel& k, const Shape& x, SoftmaxDims* out) {
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t rank1 = std::max<int64_t>(rank, 1);
  const int64_t axis = k.axis < 0 ? k.axis + rank1 : k.axis;
  if (axis < 0 || axis >= rank1) return failed(Kind::Failed, k.node + ": axis out of range");
  out->n = out->inner = 1;
  if (k.legacy_softmax) {
    for (int64_t i = axis; i < rank; ++i) out->n *= x[static_cast<size_t>(i)];
  } else if (rank > 0) {
    out->n = x[static_cast<size_t>(axis)];
    for (int64_t i = axis + 1; i < rank; ++i) out->inner *= x[static_cast<size_t>(i)];
  }
  out->outer = count(x) / (out->n * out->inner);
  return {};
}

ComputeResult prepare_matmul(const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs,
                             MatMulRun* run) {
  *run = MatMulRun{};
  MatMulDims& mm = run->dims;
  if (ComputeResult e = matmul_dims(k, shape_of(in[0]), shape_of(in[1]), &mm); e.kind != Kind::Ok) return e;
  float* out = nullptr;
  ComputeResult r = allocate(k, outputs, mm.out, &out);
  if (r.kind != Kind::Ok || mm.total == 0 || mm.k == 0) return r;
  run->y = out;
  run->batches = count(mm.batch);
  broadcast_strides(mm.a_batch, mm.batch, run->a_strides);
  broadcast_strides(mm.b_batch, mm.batch, run->b_strides);
  return r;
}

ComputeResult matmul_dims(const OpKernel& k, const Shape& a_in, const Shape& b_in, MatMulDims* out) {
  Shape a = a_in, b = b_in;
  if (a.empty() || b.empty()) return failed(Kind::Failed, k.node + ": MatMul inputs must have rank >= 1");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  out->m = a[a.size() - 2];
  out->k = a.back();
  out->n = b.back();
  if (b[b.size() - 2] != out->k) return failed(Kind::Failed, k.node + ": inner dimensions differ");
  out->a_batch.assign(a.begin(), a.end() - 2);
  out->b_batch.assign(b.begin(), b.end() - 2);
  if (!broadcast(out->a_batch, out->b_batch, &out->batch))
    return failed(Kind::Failed, k.node + ": batch dimensions do not broadcast");
  if (out->batch.size() > static_cast<size_t>(kMaxBatchRank))
    return failed(Kind::Unsupported, "more than 4 batch dimensions");
  out->out = out->batch;
  if (!a_vec) out->out.push_back(out->m);
  if (!b_vec) out->out.push_back(out->n);
  out->total = count(out->out);
  return {};
}

ComputeResult gemm_dims(const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs, GemmDims* out) {
  const Shape a = shape_of(in[0]), b = shape_of(in[1]);
  if (a.size() != 2 || b.size() != 2) return failed(Kind::Failed, k.node + ": Gemm inputs must be 2-D");
  out->m = k.trans_a ? a[1] : a[0];
  out->k = k.trans_a ? a[0] : a[1];
  out->n = k.trans_b ? b[0] : b[1];
  if ((k.trans_b ? b[1] : b[0]) != out->k) return failed(Kind::Failed, k.node + ": inner dimensions differ");
  out->c = num_inputs > 2 && in[2].dtype != EPPROF_EP_DTYPE_UNDEFINED ? &in[2] : nullptr;
  if (out->c) {
    out->c_shape = shape_of(*out->c);
    const Shape& cs = out->c_shape;
    out->c_rows = cs.size() == 2 ? cs[0] : 1;
    out->c_cols = cs.empty() ? 1 : cs.back();
    if (cs.size() > 2 || (out->c_rows != 1 && out->c_rows != out->m) || (out->c_cols != 1 && out->c_cols != out->n))
      return failed(Kind::Failed, k.node + ": C does not broadcast to [M,N]");
  }
  return {};
}

ComputeResult resize_plan(const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs, ResizePlan* out) {
  constexpr int64_t kMaxResizeDim = int64_t(1) << 31;  // tap tables and float index math stay exact
  const Shape x = shape_of(in[0]);
  const size_t rank = x.size();
  if (rank < 2) return failed(Kind::Unsupported, k.node + ": Resize needs rank >= 2 on the device");
  const epprof_ep_tensor* scales = num_inputs > 2 && in[2].byte_size > 0 ? &in[2] : nullptr;
  const epprof_ep_tensor* sizes = num_inputs > 3 && in[3].byte_size > 0 ? &in[3] : nullptr;
  if (!scales == !sizes) return failed(Kind::Failed, k.node + ": exactly one of scales and sizes must be given");
  const epprof_ep_tensor& given = scales ? *scales : *sizes;
  if (given.dtype != (scales ? EPPROF_EP_DTYPE_FLOAT : EPPROF_EP_DTYPE_INT64))
    return failed(Kind::Failed, k.node + ": scales must be float32 and sizes int64");
  const size_t elem = scales ? sizeof(float) : sizeof(int64_t);
  if (given.byte_size != rank * elem)
    return failed(Kind::Failed, k.node + ": " + (scales ? "scales" : "sizes") + " must have one value per axis (" +
                                    std::to_string(rank) + ")");
  std::vector<double> scale(rank);
  Shape o(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (scales) {
      float f;
      std::memcpy(&f, static_cast<const char*>(given.data) + d * elem, sizeof f);
      if (!(f > 0.0f) || !std::isfinite(f)) return failed(Kind::Failed, k.node + ": scales must be positive and finite");
      scale[d] = f;
      const double out_dim = std::floor(static_cast<double>(x[d]) * f);
      if (out_dim > kMaxResizeDim)
        return failed(Kind::Failed, k.node + ": scales give an output dim of " + std::to_string(out_dim));
      o[d] = static_cast<int64_t>(out_dim);
    } else {
      std::memcpy(&o[d], static_cast<const char*>(given.data) + d * elem, sizeof o[d]);
      if (o[d] < 0 || o[d] > kMaxResizeDim)
        return failed(Kind::Failed, k.node + ": sizes must be in [0, 2^31], got " + std::to_string(o[d]));
      scale[d] = x[d] ? static_cast<double>(o[d]) / static_cast<double>(x[d]) : 1.0;
    }
  }
  for (size_t d = 0; d + 2 < rank; ++d)
    if (o[d] != x[d]) return failed(Kind::Unsupported, k.node + ": only the last two axes resize on the device");
  ResizePlan& p = *out;
  p = ResizePlan{};
  p.out = o;
  p.taps = k.resize.linear ? 2 : 1;
  p.ih = x[rank - 2], p.iw = x[rank - 1], p.oh = o[rank - 2], p.ow = o[rank - 1];
  p.planes = p.ih * p.iw > 0 ? count(x) / (p.ih * p.iw) : 0;
  if (p.ih > 0 && p.iw > 0) {
    resize_axis(k.resize, p.ih, p.oh, scale[rank - 2], &p.y_idx, &p.y_w);
    resize_axis(k.resize, p.iw, p.ow, scale[rank - 1], &p.x_idx, &p.x_w);
  }
  return {};
}

epprof_status* create_kernel(const epprof_host_api* host, const char* who, OpSet supported,
                             const epprof_ep_node& node, void** out_kernel) {
  try {
    auto k = std::make_unique<OpKernel>();
    std::string why_not;
    if (!parse_node(node, supported, k.get(), &why_not))
      return host->status_create(EPPROF_UNSUPPORTED,
                                 (std::string(who) + "cannot run node '" + node.name + "' " + why_not).c_str());
    k->host = host;
    *out_kernel = k.release();
    return nullptr;
  } catch (const std::bad_alloc&) {
    return host->status_create(EPPROF_OUT_OF_MEMORY, (std::string(who) + "create_kernel: out of host memory").c_str());
  } catch (const std::exception& e) {
    return host->status_create(EPPROF_PLUGIN_ERROR, (std::string(who) + "create_kernel: " + e.what()).c_str());
  }
}

void release_kernel(void* kernel) { delete static_cast<OpKernel*>(kernel); }

epprof_status* to_status(const epprof_host_api* host, const char* who, const ComputeResult& r) {
  epprof_status_code code = EPPROF_PLUGIN_ERROR;
  switch (r.kind) {
    case Kind::Ok: return nullptr;
    case Kind::OutOfMemory: code = EPPROF_OUT_OF_MEMORY; break;
    case Kind::Unsupported: code = EPPROF_UNSUPPORTED; break;
    case Kind::Failed: break;
  }
  return host->status_create(code, (who + r.message).c_str());
}

}  // namespace epprof::ep_common
