// What the CUDA EP runs: which nodes it claims, and each op's dispatch
// (explicit copies in, kernels or cuBLAS, copy out), with numpy
// broadcasting as in the CPU EP.
#pragma once
#include <string>

#include "device.h"
#include "epprof/ep_plugin.h"

namespace epprof::cuda {

enum class Op { Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Softmax, MatMul, Gemm };

// A kernel: the op and its attributes, read once at create_kernel.
struct OpKernel {
  const epprof_host_api* host = nullptr;  // for the statuses of outputs->allocate
  Op op = Op::Add;
  std::string node;  // "node 'fc1' (Gemm)", for messages
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
  int64_t axis = -1;
  bool legacy_softmax = false;  // opset < 13: coerce to 2-D at axis
};

// Whether the EP supports `node`; on true, *kernel describes it.
bool parse_node(const epprof_ep_node& node, OpKernel* kernel, std::string* why_not);

struct ComputeResult {
  enum class Kind { Ok, OutOfMemory, Unsupported, Failed } kind = Kind::Ok;
  std::string message;
};

// Runs the kernel synchronously on a worker of `device`.
ComputeResult compute(Device& device, uint64_t alloc_limit, const OpKernel& k, const epprof_ep_tensor* inputs,
                      size_t num_inputs, epprof_ep_outputs* outputs);

}  // namespace epprof::cuda
