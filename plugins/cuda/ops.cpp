#include "ops.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace epprof::cuda {

using namespace ep_common;

namespace {

using Kind = ComputeResult::Kind;

ComputeResult device_failure(const OpKernel& k, const Dispatch& d) {
  if (d.out_of_memory()) return failed(Kind::OutOfMemory, "device out of memory running " + k.node + ": " + d.error());
  return failed(Kind::Failed, "running " + k.node + " failed: " + d.error());
}

KernelId kernel_of(Op op) {
  switch (op) {
    case Op::Add: return KernelId::Add;
    case Op::Sub: return KernelId::Sub;
    case Op::Mul: return KernelId::Mul;
    case Op::Div: return KernelId::Div;
    case Op::Relu: return KernelId::Relu;
    case Op::Sigmoid: return KernelId::Sigmoid;
    case Op::Tanh: return KernelId::Tanh;
    default: return KernelId::Softmax;
  }
}

ComputeResult run_binary(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  BroadcastParams p;
  float* y = nullptr;
  if (ComputeResult r = prepare_binary(k, in, outputs, &p, &y); r.kind != Kind::Ok || !y) return r;
  const int64_t n = p.n;
  float *ma = nullptr, *mb = nullptr, *my = nullptr;
  void* args[] = {&ma, &mb, &my, &p};
  if (!d.upload(in[0].data, in[0].byte_size, &ma) || !d.upload(in[1].data, in[1].byte_size, &mb) ||
      !d.alloc(bytes_of(n), &my) || !d.launch(kernel_of(k.op), n, args) || !d.download(my, y, bytes_of(n)) ||
      !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_unary(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  int64_t count = 0;
  float* y = nullptr;
  if (ComputeResult r = prepare_elementwise(k, in, outputs, &count, &y); r.kind != Kind::Ok || count == 0) return r;
  long long n = count;
  float *mx = nullptr, *my = nullptr;
  void* args[] = {&mx, &my, &n};
  if (!d.upload(in[0].data, in[0].byte_size, &mx) || !d.alloc(bytes_of(n), &my) || !d.launch(kernel_of(k.op), n, args) ||
      !d.download(my, y, bytes_of(n)) || !d.finish())
    return device_failure(k, d);
  return {};
}

ComputeResult run_softmax(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  SoftmaxRun s;
  if (ComputeResult r = prepare_softmax(k, in, outputs, &s); r.kind != Kind::Ok || s.total == 0) return r;
  long long n = s.dims.n, inner = s.dims.inner, outer = s.dims.outer;
  float *mx = nullptr, *my = nullptr;
  void* args[] = {&mx, &my, &outer, &n, &inner};
  if (!d.upload(in[0].data, in[0].byte_size, &mx) || !d.alloc(bytes_of(s.total), &my) ||
      !d.launch(KernelId::Softmax, outer * inner, args) || !d.download(my, s.y, bytes_of(s.total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

// Row-major Y[m,n] = A[m,k]·B[k,n] is column-major Yᵀ = Bᵀ·Aᵀ: cuBLAS gets B first.
ComputeResult run_matmul(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, epprof_ep_outputs* outputs) {
  MatMulRun mm;
  if (ComputeResult r = prepare_matmul(k, in, outputs, &mm); r.kind != Kind::Ok || !mm.y) return r;
  const Shape& batch = mm.dims.batch;
  const int64_t m = mm.dims.m, ka = mm.dims.k, n = mm.dims.n, total = mm.dims.total, nb = mm.batches;
  if (m > INT32_MAX || n > INT32_MAX || ka > INT32_MAX) return failed(Kind::Unsupported, "a dimension above 2^31");
  // Offsets of each batch's matrices, in elements.
  std::vector<int64_t> off_a(static_cast<size_t>(nb)), off_b(static_cast<size_t>(nb));
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rem = i, oa = 0, ob = 0;
    for (size_t dd = batch.size(); dd-- > 0;) {
      const int64_t c = rem % batch[dd];
      rem /= batch[dd];
      oa += c * mm.a_strides[dd];
      ob += c * mm.b_strides[dd];
    }
    off_a[static_cast<size_t>(i)] = oa * m * ka;
    off_b[static_cast<size_t>(i)] = ob * ka * n;
  }
  auto uniform = [&](const std::vector<int64_t>& off, int64_t* stride) {
    *stride = nb > 1 ? off[1] - off[0] : 0;
    for (int64_t i = 0; i < nb; ++i)
      if (off[static_cast<size_t>(i)] != i * *stride) return false;
    return true;
  };
  float *ma = nullptr, *mb = nullptr, *my = nullptr;
  if (!d.upload(in[0].data, in[0].byte_size, &ma) || !d.upload(in[1].data, in[1].byte_size, &mb) ||
      !d.alloc(bytes_of(total), &my))
    return device_failure(k, d);
  const float one = 1.0f, zero = 0.0f;
  const int im = static_cast<int>(m), in_ = static_cast<int>(n), ik = static_cast<int>(ka);
  int64_t stride_a = 0, stride_b = 0;
  if (nb == 1 || (uniform(off_a, &stride_a) && uniform(off_b, &stride_b))) {
    if (!d.blas(cublasSgemmStridedBatched(d.blas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, in_, im, ik, &one, mb, in_,
                                          stride_b, ma, ik, stride_a, &zero, my, in_, m * n, static_cast<int>(nb)),
                "cublasSgemmStridedBatched"))
      return device_failure(k, d);
  } else {
    for (int64_t i = 0; i < nb; ++i)
      if (!d.blas(cublasSgemm(d.blas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, in_, im, ik, &one, mb + off_b[size_t(i)], in_,
                              ma + off_a[size_t(i)], ik, &zero, my + i * m * n, in_),
                  "cublasSgemm"))
        return device_failure(k, d);
  }
  if (!d.download(my, mm.y, bytes_of(total)) || !d.finish()) return device_failure(k, d);
  return {};
}

ComputeResult run_gemm(Dispatch& d, const OpKernel& k, const epprof_ep_tensor* in, size_t num_inputs,
                       epprof_ep_outputs* outputs) {
  GemmDims g;
  if (ComputeResult e = gemm_dims(k, in, num_inputs, &g); e.kind != Kind::Ok) return e;
  const int64_t m = g.m, kk = g.k, n = g.n;
  const epprof_ep_tensor* c = g.c;
  const Shape& cs = g.c_shape;
  float* y = nullptr;
  const Shape out{m, n};
  ComputeResult r = allocate(k, outputs, out, &y);
  const int64_t total = m * n;
  if (r.kind != Kind::Ok || total == 0) return r;
  if (m > INT32_MAX || n > INT32_MAX || kk > INT32_MAX) return failed(Kind::Unsupported, "a dimension above 2^31");
  const bool use_c = c != nullptr && k.beta != 0.0f;
  if (kk == 0 && use_c)  // Y = beta·C: left to the CPU EP rather than trusting cuBLAS with K = 0
    return failed(Kind::Unsupported, k.node + ": K = 0 with a C input");
  if (kk == 0) return r;  // zeros, already
  float *ma = nullptr, *mb = nullptr, *mc = nullptr, *my = nullptr;
  if (!d.upload(in[0].data, in[0].byte_size, &ma) || !d.upload(in[1].data, in[1].byte_size, &mb) ||
      !d.alloc(bytes_of(total), &my))
    return device_failure(k, d);
  if (use_c) {
    BroadcastParams p{};
    p.rank = 2;
    p.n = total;
    p.dims[0] = m;
    p.dims[1] = n;
    broadcast_strides(cs, out, p.sa);
    void* args[] = {&mc, &my, &p};
    if (!d.upload(c->data, c->byte_size, &mc) || !d.launch(KernelId::BroadcastCopy, total, args))
      return device_failure(k, d);
  }
  const float alpha = k.alpha, beta = use_c ? k.beta : 0.0f;
  const int im = static_cast<int>(m), in_ = static_cast<int>(n), ik = static_cast<int>(kk);
  if (!d.blas(cublasSgemm(d.blas_handle(), k.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, k.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                          in_, im, ik, &alpha, mb, k.trans_b ? ik : in_, ma, k.trans_a ? im : ik, &beta, my, in_),
              "cublasSgemm") ||
      !d.download(my, y, bytes_of(total)) || !d.finish())
    return device_failure(k, d);
  return {};
}

}  // namespace

ComputeResult compute(Device& device, uint64_t alloc_limit, const OpKernel& k, const epprof_ep_tensor* in,
                      size_t num_inputs, epprof_ep_outputs* outputs) {
  for (size_t i = 0; i < num_inputs; ++i) {
    const bool optional = k.op == Op::Gemm && i == 2;
    if (in[i].dtype != EPPROF_EP_DTYPE_FLOAT && !(optional && in[i].dtype == EPPROF_EP_DTYPE_UNDEFINED))
      return failed(Kind::Unsupported, "input " + std::to_string(i) + " is not float32");
  }
  std::string error;
  Worker* w = device.acquire(&error);
  if (!w) return failed(Kind::Failed, "running " + k.node + ": " + error);
  ComputeResult r;
  {
    Dispatch d(device, *w, alloc_limit);
    switch (k.op) {
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: r = run_binary(d, k, in, outputs); break;
      case Op::Relu: case Op::Sigmoid: case Op::Tanh: r = run_unary(d, k, in, outputs); break;
      case Op::Softmax: r = run_softmax(d, k, in, outputs); break;
      case Op::MatMul: r = run_matmul(d, k, in, outputs); break;
      case Op::Gemm: r = run_gemm(d, k, in, num_inputs, outputs); break;
      default: r = failed(Kind::Unsupported, k.node + " is not an op of the CUDA EP"); break;  // never claimed
    }
  }  // the dispatch waits for its stream before the worker goes back
  device.release(w);
  return r;
}

}  // namespace epprof::cuda
