// What the OpenCL EP runs: the dispatch of each op it claims (explicit
// copies in, one kernel, copy out). Which nodes it claims, and broadcasting,
// are shared with the CUDA EP (plugins/common/ep_ops.h).
#pragma once
#include <string>
#include <vector>

#include "device.h"
#include "ep_ops.h"
#include "epprof/ep_plugin.h"

namespace epprof::opencl {

using ep_common::ComputeResult;
using ep_common::Op;
using ep_common::OpKernel;
using ep_common::parse_node;

// The ops this EP runs.
constexpr ep_common::OpSet kOpenClOps = ep_common::kBasicOps | ep_common::kCnnOps | ep_common::kMoreElementwiseOps;

// The OpenCL program holding op's kernel.
Program program_for(Op op);

// Runs the kernel synchronously. On Ok the device commands' records are in
// *records (device clock), their enqueue calls bracketed by `host_now`,
// and the device buffers it allocated and released in *memory (host clock).
ComputeResult compute(Device& device, uint64_t alloc_limit, HostClock host_now, const OpKernel& k,
                      const epprof_ep_tensor* inputs, size_t num_inputs, epprof_ep_outputs* outputs,
                      std::vector<CommandRecord>* records, std::vector<MemoryRecord>* memory);

}  // namespace epprof::opencl
