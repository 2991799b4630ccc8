#include "ep_ops.h"

#include <algorithm>
#include <cstring>
#include <memory>

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

epprof_status* create_kernel(const epprof_host_api* host, const char* who, const epprof_ep_node& node,
                             void** out_kernel) {
  try {
    auto k = std::make_unique<OpKernel>();
    std::string why_not;
    if (!parse_node(node, k.get(), &why_not))
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
