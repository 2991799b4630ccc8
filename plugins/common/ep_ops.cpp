#include "ep_ops.h"

#include <algorithm>
#include <cstring>

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
