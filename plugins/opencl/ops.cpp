#include "ops.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace epprof::opencl {

using namespace ep_common;

namespace {

using Kind = ComputeResult::Kind;

ComputeResult device_failure(const OpKernel& k, const Dispatch& d) {
  if (d.error().out_of_memory())
    return failed(Kind::OutOfMemory, "device out of memory running " + k.node + ": " + d.error().message);
  return failed(Kind::Failed, "running " + k.node + " failed: " + d.error().message);
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
    case Op::Conv: return "conv2d";
    case Op::MaxPool: return "maxpool2d";
    case Op::AveragePool: return "avgpool2d";
    case Op::GlobalAveragePool: return "global_avgpool";
    case Op::BatchNormalization: return "batchnorm";
    case Op::Clip: return "clip";
    case Op::Resize: return "resize2d";
    case Op::Exp: return "unary_exp";
    case Op::Log: return "unary_log";
    case Op::Sqrt: return "unary_sqrt";
    case Op::Neg: return "unary_neg";
    case Op::Abs: return "unary_abs";
    case Op::Erf: return "unary_erf";
    case Op::Reciprocal: return "unary_reciprocal";
    case Op::Softplus: return "unary_softplus";
    case Op::LeakyRelu: return "unary_leaky_relu";
    case Op::HardSigmoid: return "unary_hard_sigmoid";
    case Op::Elu: return "unary_elu";
    case Op::Pow: return "binary_pow";
  }
  return "?";
}

}  // namespace

Program program_for(Op op) {
  switch (op) {
    case Op::Softmax: return Program::Softmax;
    case Op::MatMul: return Program::MatMul;
    case Op::Gemm: return Program::Gemm;
    case Op::Conv: case Op::MaxPool: case Op::AveragePool: case Op::GlobalAveragePool:
    case Op::BatchNormalization: case Op::Resize: return Program::Cnn;
    default: return Program::Elementwise;
  }
}

namespace {

ComputeResult run_binary(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  BroadcastParams p;
  float* y = nullptr;
  if (ComputeResult r = prepare_binary(k, in, outputs, &p, &y); r.kind != Kind::Ok || !y) return r;
  const int64_t n = p.n;
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

// Every unary kernel takes parameters a and b (LeakyRelu's alpha, Clip's
// bounds, ...); most ignore them.
ComputeResult run_unary(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs,
                        cl_float a, cl_float b) {
  int64_t n = 0;
  float* y = nullptr;
  if (ComputeResult r = prepare_elementwise(k, in, outputs, &n, &y); r.kind != Kind::Ok || n == 0) return r;
  cl_long cn = n;
  cl_mem mx, my;
  cl_kernel kern;
  const size_t global = static_cast<size_t>(n);
  if (!d.upload(in[0].data, in[0].byte_size, &mx) || !d.create_output(bytes_of(n), &my) ||
      !d.kernel(Program::Elementwise, kernel_name(k.op), &kern) || !d.set_arg(kern, 0, sizeof mx, &mx, "X") ||
      !d.set_arg(kern, 1, sizeof my, &my, "Y") || !d.set_arg(kern, 2, sizeof cn, &cn, "n") ||
      !d.set_arg(kern, 3, sizeof a, &a, "a") || !d.set_arg(kern, 4, sizeof b, &b, "b") ||
      !d.run(kern, kernel_name(k.op), 1, &global) || !d.download(my, y, bytes_of(n)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_softmax(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  SoftmaxRun s;
  if (ComputeResult r = prepare_softmax(k, in, outputs, &s); r.kind != Kind::Ok || s.total == 0) return r;
  cl_long n = s.dims.n, inner = s.dims.inner, outer = s.dims.outer;
  cl_mem mx, my;
  cl_kernel kern;
  const size_t global = static_cast<size_t>(outer * inner);
  if (!d.upload(in[0].data, in[0].byte_size, &mx) || !d.create_output(bytes_of(s.total), &my) ||
      !d.kernel(Program::Softmax, "softmax", &kern) || !d.set_arg(kern, 0, sizeof mx, &mx, "X") ||
      !d.set_arg(kern, 1, sizeof my, &my, "Y") || !d.set_arg(kern, 2, sizeof outer, &outer, "outer") ||
      !d.set_arg(kern, 3, sizeof n, &n, "n") || !d.set_arg(kern, 4, sizeof inner, &inner, "inner") ||
      !d.run(kern, "softmax", 1, &global) || !d.download(my, s.y, bytes_of(s.total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_matmul(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  MatMulRun mm;
  if (ComputeResult r = prepare_matmul(k, in, outputs, &mm); r.kind != Kind::Ok || !mm.y) return r;
  const int64_t total = mm.dims.total;
  MatMulParams p{};
  p.m = mm.dims.m;
  p.n = mm.dims.n;
  p.k = mm.dims.k;
  p.batch = mm.batches;
  p.brank = static_cast<cl_long>(mm.dims.batch.size());
  for (size_t i = 0; i < mm.dims.batch.size(); ++i) {
    p.bdims[i] = mm.dims.batch[i];
    p.sa[i] = mm.a_strides[i];  // in matrices, as the kernel scales by m*k / k*n
    p.sb[i] = mm.b_strides[i];
  }
  cl_mem ma, mb, my;
  cl_kernel kern;
  const size_t global[3] = {static_cast<size_t>(p.n), static_cast<size_t>(p.m), static_cast<size_t>(p.batch)};
  if (!d.upload(in[0].data, in[0].byte_size, &ma) || !d.upload(in[1].data, in[1].byte_size, &mb) ||
      !d.create_output(bytes_of(total), &my) || !d.kernel(Program::MatMul, "matmul", &kern) ||
      !d.set_arg(kern, 0, sizeof ma, &ma, "A") || !d.set_arg(kern, 1, sizeof mb, &mb, "B") ||
      !d.set_arg(kern, 2, sizeof my, &my, "Y") || !d.set_arg(kern, 3, sizeof p, &p, "params") ||
      !d.run(kern, "matmul", 3, global) || !d.download(my, mm.y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_gemm(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs,
                       epprof_ep_outputs* outputs) {
  GemmDims g;
  if (ComputeResult e = gemm_dims(k, in, num_inputs, &g); e.kind != Kind::Ok) return e;
  const epprof_ep_tensor* c = g.c;
  const cl_long csm = c && g.c_rows != 1 ? g.c_cols : 0;  // C's strides over [M, N] (0: broadcast)
  const cl_long csn = c && g.c_cols != 1 ? 1 : 0;
  const GemmParams p{g.m, g.n, g.k, k.trans_a, k.trans_b, c != nullptr, csm, csn, k.alpha, k.beta};
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

// ---- A CNN's ops ----

// Uploads every input with data, in order, into `mems` (null for an omitted
// or empty one: the kernels read no bytes of it).
bool upload_inputs(Dispatch& d, const epprof_ep_tensor* in, size_t num_inputs, cl_mem* mems) {
  for (size_t i = 0; i < num_inputs; ++i) {
    mems[i] = nullptr;
    if (in[i].byte_size > 0 && !d.upload(in[i].data, in[i].byte_size, &mems[i])) return false;
  }
  return true;
}

WindowParams window_params(const WindowDims& w, bool has_bias, bool count_include_pad) {
  return WindowParams{w.n, w.c, w.h, w.w, w.m, w.oh, w.ow,  // in the fields' order
                      w.kh, w.kw, w.sh, w.sw, w.dh, w.dw,
                      w.pad_top, w.pad_left, w.pad_bottom, w.pad_right,
                      w.group, has_bias, count_include_pad};
}

// Conv (any group: depthwise is group == C) and the two window pools.
ComputeResult run_window(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs,
                         epprof_ep_outputs* outputs) {
  const bool conv = k.op == Op::Conv;
  const Shape x = shape_of(in[0]);
  const Shape w = conv ? shape_of(in[1]) : Shape{};
  WindowDims dims;
  if (ComputeResult e = window_dims(k, x, conv ? &w : nullptr, &dims); e.kind != Kind::Ok) return e;
  const bool has_bias = conv && num_inputs > 2 && in[2].dtype != EPPROF_EP_DTYPE_UNDEFINED;
  if (has_bias && count(shape_of(in[2])) != dims.m)
    return failed(Kind::Failed, k.node + ": bias B must have " + std::to_string(dims.m) + " elements");
  float* y = nullptr;
  ComputeResult r = allocate(k, outputs, dims.out, &y);
  const int64_t total = count(dims.out);
  if (r.kind != Kind::Ok || total == 0) return r;
  if (count(x) == 0 || (conv && count(w) == 0))
    return failed(Kind::Unsupported, k.node + ": an empty input with a non-empty output does not run on the device");
  const WindowParams p = window_params(dims, has_bias, k.window.count_include_pad);
  cl_mem mem[3] = {}, my = nullptr;
  cl_kernel kern;
  const char* name = kernel_name(k.op);
  const size_t global[3] = {static_cast<size_t>(dims.ow), static_cast<size_t>(dims.oh),
                            static_cast<size_t>(dims.n * (conv ? dims.m : dims.c))};
  bool ok = upload_inputs(d, in, conv ? std::min<size_t>(num_inputs, 3) : 1, mem) &&
            d.create_output(bytes_of(total), &my) && d.kernel(Program::Cnn, name, &kern) &&
            d.set_arg(kern, 0, sizeof(cl_mem), &mem[0], "X");
  cl_uint arg = 1;
  if (ok && conv)
    ok = d.set_arg(kern, arg++, sizeof(cl_mem), &mem[1], "W") && d.set_arg(kern, arg++, sizeof(cl_mem), &mem[2], "B");
  if (!ok || !d.set_arg(kern, arg++, sizeof my, &my, "Y") || !d.set_arg(kern, arg, sizeof p, &p, "params") ||
      !d.run(kern, name, 3, global) || !d.download(my, y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

// GlobalAveragePool (one work-item per plane) and BatchNormalization (per element).
ComputeResult run_planes(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  const Shape x = shape_of(in[0]);
  const bool pool = k.op == Op::GlobalAveragePool;
  PlaneParams p{};
  p.c = x[1];
  p.planes = x[0] * x[1];
  p.spatial = p.planes > 0 ? count(x) / p.planes : 0;
  p.epsilon = k.epsilon;
  Shape out = x;
  if (pool) std::fill(out.begin() + 2, out.end(), 1);
  const size_t num_inputs = pool ? 1 : 5;
  for (size_t i = 1; i < num_inputs; ++i)
    if (shape_of(in[i]) != Shape{p.c})
      return failed(Kind::Failed, k.node + ": input " + std::to_string(i) + " must be float32[" +
                                      std::to_string(p.c) + "]");
  float* y = nullptr;
  ComputeResult r = allocate(k, outputs, out, &y);
  const int64_t total = count(out);
  if (r.kind != Kind::Ok || total == 0) return r;
  if (p.spatial == 0) return failed(Kind::Unsupported, k.node + ": empty spatial dims do not run on the device");
  cl_mem mem[5] = {}, my = nullptr;
  cl_kernel kern;
  const char* name = kernel_name(k.op);
  const size_t global = static_cast<size_t>(pool ? p.planes : total);
  bool ok = upload_inputs(d, in, num_inputs, mem) && d.create_output(bytes_of(total), &my) &&
            d.kernel(Program::Cnn, name, &kern);
  static const char* const kArgs[] = {"X", "scale", "B", "mean", "var"};
  for (cl_uint i = 0; ok && i < num_inputs; ++i) ok = d.set_arg(kern, i, sizeof(cl_mem), &mem[i], kArgs[i]);
  const auto n = static_cast<cl_uint>(num_inputs);
  if (!ok || !d.set_arg(kern, n, sizeof my, &my, "Y") || !d.set_arg(kern, n + 1, sizeof p, &p, "params") ||
      !d.run(kern, name, 1, &global) || !d.download(my, y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_resize(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs,
                         epprof_ep_outputs* outputs) {
  ResizePlan plan;
  if (ComputeResult e = resize_plan(k, in, num_inputs, &plan); e.kind != Kind::Ok) return e;
  float* y = nullptr;
  ComputeResult r = allocate(k, outputs, plan.out, &y);
  const int64_t total = count(plan.out);
  if (r.kind != Kind::Ok || total == 0) return r;
  if (plan.ih == 0 || plan.iw == 0)
    return failed(Kind::Unsupported, k.node + ": an empty input with a non-empty output does not run on the device");
  static_assert(sizeof(cl_long) == sizeof(int64_t), "tap indices are uploaded as they are");
  const ResizeParams p{plan.planes, plan.ih, plan.iw, plan.oh, plan.ow, plan.taps};
  cl_mem mx, myi, myw, mxi, mxw, my;
  cl_kernel kern;
  const size_t global[3] = {static_cast<size_t>(p.ow), static_cast<size_t>(p.oh), static_cast<size_t>(p.planes)};
  const auto bytes = [](const auto& v) { return v.size() * sizeof(v[0]); };
  if (!d.upload(in[0].data, in[0].byte_size, &mx) || !d.upload(plan.y_idx.data(), bytes(plan.y_idx), &myi) ||
      !d.upload(plan.y_w.data(), bytes(plan.y_w), &myw) || !d.upload(plan.x_idx.data(), bytes(plan.x_idx), &mxi) ||
      !d.upload(plan.x_w.data(), bytes(plan.x_w), &mxw) || !d.create_output(bytes_of(total), &my) ||
      !d.kernel(Program::Cnn, "resize2d", &kern) || !d.set_arg(kern, 0, sizeof mx, &mx, "X") ||
      !d.set_arg(kern, 1, sizeof myi, &myi, "row taps") || !d.set_arg(kern, 2, sizeof myw, &myw, "row weights") ||
      !d.set_arg(kern, 3, sizeof mxi, &mxi, "column taps") || !d.set_arg(kern, 4, sizeof mxw, &mxw, "column weights") ||
      !d.set_arg(kern, 5, sizeof my, &my, "Y") || !d.set_arg(kern, 6, sizeof p, &p, "params") ||
      !d.run(kern, "resize2d", 3, global) || !d.download(my, y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_clip(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs,
                       epprof_ep_outputs* outputs) {
  float lo = k.clip_min, hi = k.clip_max;
  if (k.clip_bounds_are_inputs) {
    lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
    const char* names[] = {"", "min", "max"};
    for (size_t i = 1; i < num_inputs && i < 3; ++i) {
      if (in[i].dtype == EPPROF_EP_DTYPE_UNDEFINED) continue;  // omitted
      if (in[i].byte_size != sizeof(float))
        return failed(Kind::Failed, k.node + ": input '" + names[i] + "' must be a float32 scalar");
      std::memcpy(i == 1 ? &lo : &hi, in[i].data, sizeof(float));
    }
  }
  return run_unary(d, k, in, outputs, lo, hi);
}

}  // namespace

ComputeResult compute(Device& device, uint64_t alloc_limit, HostClock host_now, const OpKernel& k,
                      const epprof_ep_tensor* in, size_t num_inputs, epprof_ep_outputs* outputs,
                      std::vector<CommandRecord>* records, std::vector<MemoryRecord>* memory) {
  for (size_t i = 0; i < num_inputs; ++i) {
    const bool optional = (k.op == Op::Gemm && i == 2) || (k.op == Op::Conv && i == 2) || (k.op == Op::Clip && i > 0);
    if (k.op == Op::Resize && i > 0) break;  // roi, scales, sizes: checked by resize_plan
    if (in[i].dtype != EPPROF_EP_DTYPE_FLOAT && !(optional && in[i].dtype == EPPROF_EP_DTYPE_UNDEFINED))
      return failed(Kind::Unsupported, "input " + std::to_string(i) + " is not float32");
  }
  Dispatch d(device, alloc_limit, host_now);
  ComputeResult r;
  switch (k.op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: r = run_binary(d, k, in, outputs); break;
    case Op::Relu: case Op::Sigmoid: case Op::Tanh: case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Neg:
    case Op::Abs: case Op::Erf: case Op::Reciprocal: case Op::Softplus: case Op::LeakyRelu: case Op::HardSigmoid:
    case Op::Elu: r = run_unary(d, k, in, outputs, k.alpha, k.beta); break;
    case Op::Softmax: r = run_softmax(d, k, in, outputs); break;
    case Op::MatMul: r = run_matmul(d, k, in, outputs); break;
    case Op::Gemm: r = run_gemm(d, k, in, num_inputs, outputs); break;
    case Op::Conv: case Op::MaxPool: case Op::AveragePool: r = run_window(d, k, in, num_inputs, outputs); break;
    case Op::GlobalAveragePool: case Op::BatchNormalization: r = run_planes(d, k, in, outputs); break;
    case Op::Clip: r = run_clip(d, k, in, num_inputs, outputs); break;
    case Op::Resize: r = run_resize(d, k, in, num_inputs, outputs); break;
  }
  if (r.kind == Kind::Ok) {
    *records = d.records();
    *memory = d.take_memory_records();
  }
  return r;
}

}  // namespace epprof::opencl
