// What the CUDA EP runs: the dispatch of each op it claims (explicit copies
// in, kernels or cuBLAS, copy out). Which nodes it claims, and
// broadcasting, are shared with the OpenCL EP (plugins/common/ep_ops.h).
#pragma once
#include <string>

#include "device.h"
#include "ep_ops.h"
#include "epprof/ep_plugin.h"

namespace epprof::cuda {

using ep_common::ComputeResult;
using ep_common::Op;
using ep_common::OpKernel;
using ep_common::parse_node;

// Runs the kernel synchronously on a worker of `device`.
ComputeResult compute(Device& device, uint64_t alloc_limit, const OpKernel& k, const epprof_ep_tensor* inputs,
                      size_t num_inputs, epprof_ep_outputs* outputs);

}  // namespace epprof::cuda
