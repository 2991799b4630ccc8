#include "ops.h"

#include <cstring>

namespace epprof::opencl {

namespace {

using Shape = std::vector<int64_t>;
using Kind = ComputeResult::Kind;

struct OpInfo {
  const char* type;
  Op op;
  int min_opset;  // the first opset with today's semantics (broadcasting, optional C, ...)
  size_t min_inputs, max_inputs;
};

constexpr OpInfo kOps[] = {
    {"Add", Op::Add, 7, 2, 2},         {"Sub", Op::Sub, 7, 2, 2},
    {"Mul", Op::Mul, 7, 2, 2},         {"Div", Op::Div, 7, 2, 2},
    {"Relu", Op::Relu, 6, 1, 1},       {"Sigmoid", Op::Sigmoid, 6, 1, 1},
    {"Tanh", Op::Tanh, 6, 1, 1},       {"Softmax", Op::Softmax, 1, 1, 1},
    {"MatMul", Op::MatMul, 1, 2, 2},   {"Gemm", Op::Gemm, 7, 2, 3},
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

// Element strides of `s` aligned right to `out` (0 on broadcast dims).
void broadcast_strides(const Shape& s, const Shape& out, cl_long* strides) {
  int64_t stride = 1;
  for (size_t i = out.size(); i-- > 0;) {
    const size_t back = out.size() - 1 - i;
    if (back < s.size()) {
      const int64_t d = s[s.size() - 1 - back];
      strides[i] = d == 1 ? 0 : stride;
      stride *= d;
    } else {
      strides[i] = 0;
    }
  }
}

ComputeResult failed(Kind kind, const std::string& msg) { return ComputeResult{kind, msg}; }

ComputeResult device_failure(const OpKernel& k, const Dispatch& d) {
  if (d.error().out_of_memory())
    return failed(Kind::OutOfMemory, "device out of memory running " + k.node + ": " + d.error().message);
  return failed(Kind::Failed, "running " + k.node + " failed: " + d.error().message);
}

// Allocates output 0 with `shape`; *data is its host buffer.
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

const char* kernel_name(Op op) {
  switch (op) {
    case Op::Add: return "binary_add";
    case Op::Sub: return "binary_sub";
    case Op::Mul: return "binary_mul";
    case Op::Div: return "binary_div";
    case Op::Relu: return "unary_relu";
    case Op::Sigmoid: return "unary_sigmoid";
    case Op::Tanh: return "unary_tanh";
    case Op::Softmax: return "softmax";
    case Op::MatMul: return "matmul";
    case Op::Gemm: return "gemm";
  }
  return "?";
}

size_t bytes_of(int64_t elements) { return static_cast<size_t>(elements) * sizeof(float); }

}  // namespace

Program program_for(Op op) {
  switch (op) {
    case Op::Softmax: return Program::Softmax;
    case Op::MatMul: return Program::MatMul;
    case Op::Gemm: return Program::Gemm;
    default: return Program::Elementwise;
  }
}

bool parse_node(const epprof_ep_node& n, OpKernel* k, std::string* why_not) {
  if (n.domain[0] != '\0' || n.num_outputs != 1) return false;
  const OpInfo* info = nullptr;
  for (const auto& o : kOps)
    if (std::strcmp(o.type, n.op_type) == 0) info = &o;
  if (!info || n.opset < info->min_opset || n.num_inputs < info->min_inputs || n.num_inputs > info->max_inputs)
    return false;
  for (size_t i = 0; i < n.num_inputs; ++i) {
    const epprof_ep_tensor& t = n.inputs[i];
    const bool omitted = i >= info->min_inputs && t.dtype == EPPROF_EP_DTYPE_UNDEFINED && t.rank == 0;
    if (!omitted && t.dtype != EPPROF_EP_DTYPE_FLOAT) {
      *why_not = "input " + std::to_string(i) + " is not known to be float32";
      return false;
    }
  }
  const int32_t r0 = n.inputs[0].rank, r1 = n.num_inputs > 1 ? n.inputs[1].rank : 0;
  switch (info->op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
      if (r0 > kMaxBroadcastRank || r1 > kMaxBroadcastRank) return false;
      break;
    case Op::MatMul:
      if (r0 == 0 || r1 == 0 || r0 > kMaxBatchRank + 2 || r1 > kMaxBatchRank + 2) return false;
      break;
    case Op::Gemm:
      if ((r0 >= 0 && r0 != 2) || (r1 >= 0 && r1 != 2)) return false;
      if (n.num_inputs > 2 && n.inputs[2].rank > 2) return false;
      break;
    default: break;
  }
  k->op = info->op;
  k->node = std::string("node '") + n.name + "' (" + n.op_type + ")";
  k->alpha = attr_float(n, "alpha", 1.0f);
  k->beta = attr_float(n, "beta", 1.0f);
  k->trans_a = attr_int(n, "transA", 0) != 0;
  k->trans_b = attr_int(n, "transB", 0) != 0;
  k->legacy_softmax = n.opset < 13;
  k->axis = attr_int(n, "axis", k->legacy_softmax ? 1 : -1);
  return true;
}

namespace {

ComputeResult run_binary(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  const Shape a = shape_of(in[0]), b = shape_of(in[1]);
  Shape out;
  if (!broadcast(a, b, &out))
    return failed(Kind::Failed, k.node + ": input shapes do not broadcast");
  if (out.size() > static_cast<size_t>(kMaxBroadcastRank))
    return failed(Kind::Unsupported, "rank " + std::to_string(out.size()) + " is above the EP's limit of 6");
  float* y = nullptr;
  ComputeResult r = allocate(k, outputs, out, &y);
  const int64_t n = count(out);
  if (r.kind != Kind::Ok || n == 0) return r;
  BroadcastParams p{};
  p.rank = static_cast<cl_long>(out.size());
  p.n = n;
  for (size_t i = 0; i < out.size(); ++i) p.dims[i] = out[i];
  broadcast_strides(a, out, p.sa);
  broadcast_strides(b, out, p.sb);
  cl_mem ma, mb, my;
  cl_kernel kern;
  const size_t global = static_cast<size_t>(n);
  if (!d.upload(in[0].data, in[0].byte_size, &ma) || !d.upload(in[1].data, in[1].byte_size, &mb) ||
      !d.create_output(bytes_of(n), &my) || !d.kernel(Program::Elementwise, kernel_name(k.op), &kern) ||
      !d.set_arg(kern, 0, sizeof ma, &ma, "A") || !d.set_arg(kern, 1, sizeof mb, &mb, "B") ||
      !d.set_arg(kern, 2, sizeof my, &my, "Y") || !d.set_arg(kern, 3, sizeof p, &p, "params") ||
      !d.run(kern, kernel_name(k.op), 1, &global) || !d.download(my, y, bytes_of(n)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_unary(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  const Shape x = shape_of(in[0]);
  float* y = nullptr;
  ComputeResult r = allocate(k, outputs, x, &y);
  const int64_t n = count(x);
  if (r.kind != Kind::Ok || n == 0) return r;
  cl_long cn = n;
  cl_mem mx, my;
  cl_kernel kern;
  const size_t global = static_cast<size_t>(n);
  if (!d.upload(in[0].data, in[0].byte_size, &mx) || !d.create_output(bytes_of(n), &my) ||
      !d.kernel(Program::Elementwise, kernel_name(k.op), &kern) || !d.set_arg(kern, 0, sizeof mx, &mx, "X") ||
      !d.set_arg(kern, 1, sizeof my, &my, "Y") || !d.set_arg(kern, 2, sizeof cn, &cn, "n") ||
      !d.run(kern, kernel_name(k.op), 1, &global) || !d.download(my, y, bytes_of(n)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_softmax(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  const Shape x = shape_of(in[0]);
  float* y = nullptr;
  ComputeResult r = allocate(k, outputs, x, &y);
  const int64_t total = count(x);
  if (r.kind != Kind::Ok || total == 0) return r;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t rank1 = std::max<int64_t>(rank, 1);
  int64_t axis = k.axis < 0 ? k.axis + rank1 : k.axis;
  if (axis < 0 || axis >= rank1) return failed(Kind::Failed, k.node + ": axis out of range");
  cl_long n = 1, inner = 1;
  if (k.legacy_softmax) {
    for (int64_t i = axis; i < rank; ++i) n *= x[static_cast<size_t>(i)];
  } else if (rank > 0) {
    n = x[static_cast<size_t>(axis)];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x[static_cast<size_t>(i)];
  }
  cl_long outer = total / (n * inner);
  cl_mem mx, my;
  cl_kernel kern;
  const size_t global = static_cast<size_t>(outer * inner);
  if (!d.upload(in[0].data, in[0].byte_size, &mx) || !d.create_output(bytes_of(total), &my) ||
      !d.kernel(Program::Softmax, "softmax", &kern) || !d.set_arg(kern, 0, sizeof mx, &mx, "X") ||
      !d.set_arg(kern, 1, sizeof my, &my, "Y") || !d.set_arg(kern, 2, sizeof outer, &outer, "outer") ||
      !d.set_arg(kern, 3, sizeof n, &n, "n") || !d.set_arg(kern, 4, sizeof inner, &inner, "inner") ||
      !d.run(kern, "softmax", 1, &global) || !d.download(my, y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_matmul(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  Shape a = shape_of(in[0]), b = shape_of(in[1]);
  if (a.empty() || b.empty()) return failed(Kind::Failed, k.node + ": MatMul inputs must have rank >= 1");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t m = a[a.size() - 2], ka = a.back(), kb = b[b.size() - 2], n = b.back();
  if (ka != kb) return failed(Kind::Failed, k.node + ": inner dimensions differ");
  const Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch;
  if (!broadcast(ba, bb, &batch)) return failed(Kind::Failed, k.node + ": batch dimensions do not broadcast");
  if (batch.size() > static_cast<size_t>(kMaxBatchRank))
    return failed(Kind::Unsupported, "more than 4 batch dimensions");
  Shape out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  float* y = nullptr;
  ComputeResult r = allocate(k, outputs, out, &y);
  const int64_t total = count(out);
  if (r.kind != Kind::Ok || total == 0 || ka == 0) return r;  // K = 0: zeros, already
  MatMulParams p{};
  p.m = m;
  p.n = n;
  p.k = ka;
  p.batch = count(batch);
  p.brank = static_cast<cl_long>(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) p.bdims[i] = batch[i];
  broadcast_strides(ba, batch, p.sa);  // in matrices, as the kernel scales by m*k / k*n
  broadcast_strides(bb, batch, p.sb);
  cl_mem ma, mb, my;
  cl_kernel kern;
  const size_t global[3] = {static_cast<size_t>(n), static_cast<size_t>(m), static_cast<size_t>(p.batch)};
  if (!d.upload(in[0].data, in[0].byte_size, &ma) || !d.upload(in[1].data, in[1].byte_size, &mb) ||
      !d.create_output(bytes_of(total), &my) || !d.kernel(Program::MatMul, "matmul", &kern) ||
      !d.set_arg(kern, 0, sizeof ma, &ma, "A") || !d.set_arg(kern, 1, sizeof mb, &mb, "B") ||
      !d.set_arg(kern, 2, sizeof my, &my, "Y") || !d.set_arg(kern, 3, sizeof p, &p, "params") ||
      !d.run(kern, "matmul", 3, global) || !d.download(my, y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_gemm(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs,
                       epprof_ep_outputs* outputs) {
  const Shape a = shape_of(in[0]), b = shape_of(in[1]);
  if (a.size() != 2 || b.size() != 2) return failed(Kind::Failed, k.node + ": Gemm inputs must be 2-D");
  GemmParams p{};
  p.m = k.trans_a ? a[1] : a[0];
  p.k = k.trans_a ? a[0] : a[1];
  p.n = k.trans_b ? b[0] : b[1];
  if ((k.trans_b ? b[1] : b[0]) != p.k) return failed(Kind::Failed, k.node + ": inner dimensions differ");
  p.trans_a = k.trans_a;
  p.trans_b = k.trans_b;
  p.alpha = k.alpha;
  p.beta = k.beta;
  const epprof_ep_tensor* c = num_inputs > 2 && in[2].dtype != EPPROF_EP_DTYPE_UNDEFINED ? &in[2] : nullptr;
  if (c) {
    // C broadcasts to [M, N] in one direction only.
    const Shape cs = shape_of(*c);
    if (cs.size() > 2) return failed(Kind::Failed, k.node + ": C does not broadcast to [M,N]");
    const int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
    if ((cm != 1 && cm != p.m) || (cn != 1 && cn != p.n))
      return failed(Kind::Failed, k.node + ": C does not broadcast to [M,N]");
    p.has_c = 1;
    p.csm = cm == 1 ? 0 : cn;
    p.csn = cn == 1 ? 0 : 1;
  }
  float* y = nullptr;
  const Shape out{p.m, p.n};
  ComputeResult r = allocate(k, outputs, out, &y);
  const int64_t total = p.m * p.n;
  if (r.kind != Kind::Ok || total == 0) return r;
  cl_mem ma = nullptr, mb = nullptr, mc = nullptr, my = nullptr;
  cl_kernel kern;
  const size_t global[2] = {static_cast<size_t>(p.n), static_cast<size_t>(p.m)};
  const bool ab_empty = p.k == 0;  // no A/B bytes to copy; the kernel reads none
  if ((!ab_empty && (!d.upload(in[0].data, in[0].byte_size, &ma) || !d.upload(in[1].data, in[1].byte_size, &mb))) ||
      (c && c->byte_size > 0 && !d.upload(c->data, c->byte_size, &mc)) || !d.create_output(bytes_of(total), &my) ||
      !d.kernel(Program::Gemm, "gemm", &kern) || !d.set_arg(kern, 0, sizeof ma, &ma, "A") ||
      !d.set_arg(kern, 1, sizeof mb, &mb, "B") || !d.set_arg(kern, 2, sizeof mc, &mc, "C") ||
      !d.set_arg(kern, 3, sizeof my, &my, "Y") || !d.set_arg(kern, 4, sizeof p, &p, "params") ||
      !d.run(kern, "gemm", 2, global) || !d.download(my, y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

}  // namespace

ComputeResult compute(Device& device, uint64_t alloc_limit, const OpKernel& k, const epprof_ep_tensor* in,
                      size_t num_inputs, epprof_ep_outputs* outputs, std::vector<CommandRecord>* records) {
  for (size_t i = 0; i < num_inputs; ++i) {
    const bool optional = k.op == Op::Gemm && i == 2;
    if (in[i].dtype != EPPROF_EP_DTYPE_FLOAT && !(optional && in[i].dtype == EPPROF_EP_DTYPE_UNDEFINED))
      return failed(Kind::Unsupported, "input " + std::to_string(i) + " is not float32");
  }
  Dispatch d(device, alloc_limit);
  ComputeResult r;
  switch (k.op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: r = run_binary(d, k, in, outputs); break;
    case Op::Relu: case Op::Sigmoid: case Op::Tanh: r = run_unary(d, k, in, outputs); break;
    case Op::Softmax: r = run_softmax(d, k, in, outputs); break;
    case Op::MatMul: r = run_matmul(d, k, in, outputs); break;
    case Op::Gemm: r = run_gemm(d, k, in, num_inputs, outputs); break;
  }
  if (r.kind == Kind::Ok) *records = d.records();
  return r;
}

}  // namespace epprof::opencl
