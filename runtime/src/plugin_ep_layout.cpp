// Pins the layout of the EP plugin ABI (epprof/ep_plugin.h), version by
// version: reordering or resizing a field fails the build instead of
// breaking plugins built against an older header.
#include <cstddef>

#include "epprof/ep_plugin.h"

#define EPPROF_PIN(type, field, offset) \
  static_assert(offsetof(type, field) == (offset), #type "." #field " moved")

// epprof_ep_plugin, ABI version 1.
EPPROF_PIN(epprof_ep_plugin, abi_version, 0);
EPPROF_PIN(epprof_ep_plugin, name, 8);
EPPROF_PIN(epprof_ep_plugin, claims, 16);
EPPROF_PIN(epprof_ep_plugin, create_kernel, 24);
EPPROF_PIN(epprof_ep_plugin, compute, 32);
EPPROF_PIN(epprof_ep_plugin, release_kernel, 40);
EPPROF_PIN(epprof_ep_plugin, create_profiler, 48);
EPPROF_PIN(epprof_ep_plugin, release, 56);
static_assert(sizeof(epprof_ep_plugin) == 64, "epprof_ep_plugin v1 size");

// Host-filled structs: size first, they grow at the end only.
EPPROF_PIN(epprof_ep_tensor, size, 0);
EPPROF_PIN(epprof_ep_tensor, dtype, 8);
EPPROF_PIN(epprof_ep_tensor, rank, 12);
EPPROF_PIN(epprof_ep_tensor, dims, 16);
EPPROF_PIN(epprof_ep_tensor, data, 24);
EPPROF_PIN(epprof_ep_tensor, byte_size, 32);
static_assert(sizeof(epprof_ep_tensor) == 40, "epprof_ep_tensor v1 size");

EPPROF_PIN(epprof_ep_attribute, name, 0);
EPPROF_PIN(epprof_ep_attribute, type, 8);
EPPROF_PIN(epprof_ep_attribute, reserved, 12);
EPPROF_PIN(epprof_ep_attribute, f, 16);
EPPROF_PIN(epprof_ep_attribute, i, 24);
EPPROF_PIN(epprof_ep_attribute, s, 32);
EPPROF_PIN(epprof_ep_attribute, t, 40);
EPPROF_PIN(epprof_ep_attribute, count, 48);
EPPROF_PIN(epprof_ep_attribute, floats, 56);
EPPROF_PIN(epprof_ep_attribute, ints, 64);
EPPROF_PIN(epprof_ep_attribute, strings, 72);
static_assert(sizeof(epprof_ep_attribute) == 80, "epprof_ep_attribute v1 size");

EPPROF_PIN(epprof_ep_node, size, 0);
EPPROF_PIN(epprof_ep_node, name, 8);
EPPROF_PIN(epprof_ep_node, op_type, 16);
EPPROF_PIN(epprof_ep_node, domain, 24);
EPPROF_PIN(epprof_ep_node, opset, 32);
EPPROF_PIN(epprof_ep_node, index, 40);
EPPROF_PIN(epprof_ep_node, inputs, 48);
EPPROF_PIN(epprof_ep_node, num_inputs, 56);
EPPROF_PIN(epprof_ep_node, num_outputs, 64);
EPPROF_PIN(epprof_ep_node, attributes, 72);
EPPROF_PIN(epprof_ep_node, num_attributes, 80);
static_assert(sizeof(epprof_ep_node) == 88, "epprof_ep_node v1 size");

EPPROF_PIN(epprof_ep_outputs, size, 0);
EPPROF_PIN(epprof_ep_outputs, num_outputs, 8);
EPPROF_PIN(epprof_ep_outputs, allocate, 16);
EPPROF_PIN(epprof_ep_outputs, host_data, 24);
static_assert(sizeof(epprof_ep_outputs) == 32, "epprof_ep_outputs v1 size");

// dtype values are ONNX's TensorProto.DataType.
static_assert(EPPROF_EP_DTYPE_FLOAT == 1 && EPPROF_EP_DTYPE_INT64 == 7 && EPPROF_EP_DTYPE_DOUBLE == 11,
              "dtypes keep ONNX's numbering");
