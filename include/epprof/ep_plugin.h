/* epprof/ep_plugin.h: execution-provider (EP) plugins for a host runtime.
 *
 * An EP plugin is a shared library that runs graph nodes for a host runtime
 * (epprof's reference ONNX runtime, or any other that implements this
 * header) and, through one slot, creates its EP profiler
 * (epprof/ep_profiler.h). It exports one symbol,
 * EPPROF_EP_PLUGIN_ENTRY_SYMBOL, of type epprof_ep_plugin_entry_fn, and
 * includes only this header (and what it includes); it never links the
 * host or libepprof: statuses and events go through the epprof_host_api
 * given at entry.
 *
 * Life of a plugin, and which thread calls what:
 *
 *   entry                      once, on the loading thread
 *   claims / create_kernel     while the host partitions a graph (a session
 *                              is created): the creating thread; several
 *                              sessions may be created concurrently
 *   compute                    on the thread that runs the node, between
 *                              the host's start_event(id) and stop_event(id)
 *                              for that node on the same thread; the same
 *                              kernel may be computed concurrently by
 *                              several threads (parallel executor,
 *                              concurrent runs)
 *   release_kernel             when the session is destroyed, after every
 *                              compute on that kernel returned
 *   create_profiler            any thread, once per profiling scope
 *   release                    once, last: after every kernel and every
 *                              profiler was released
 *
 * Because compute runs on the node's thread inside the node's
 * start_event/stop_event pair, the EP profiler's per-thread correlation
 * stack has the node's id on top while compute issues device work: tag
 * that work with it.
 *
 * Status ownership is the rule of epprof/ep_profiler.h: a slot returns NULL
 * for success or a status created with host->status_create, which the host
 * then owns; a status the host returns to the plugin is the plugin's, to
 * release or to hand back as its own return value.
 */
#ifndef EPPROF_EP_PLUGIN_H
#define EPPROF_EP_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "epprof/ep_profiler.h"
#include "epprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The EP plugin ABI version this header describes. Version 1: every slot
 * below. Independent of EPPROF_EP_ABI_VERSION (the profiler ABI). */
#define EPPROF_EP_PLUGIN_ABI_VERSION 1u

/* The symbol an EP plugin exports. */
#define EPPROF_EP_PLUGIN_ENTRY_SYMBOL "epprof_ep_plugin_entry"

/* Element types, with ONNX TensorProto.DataType numbering. Append-only. */
typedef enum epprof_ep_dtype {
  EPPROF_EP_DTYPE_UNDEFINED = 0, /* unknown at load time, or an omitted input */
  EPPROF_EP_DTYPE_FLOAT = 1,
  EPPROF_EP_DTYPE_UINT8 = 2,
  EPPROF_EP_DTYPE_INT8 = 3,
  EPPROF_EP_DTYPE_INT32 = 6,
  EPPROF_EP_DTYPE_INT64 = 7,
  EPPROF_EP_DTYPE_BOOL = 9,
  EPPROF_EP_DTYPE_DOUBLE = 11
} epprof_ep_dtype;

/* A tensor in host memory, dense and row-major. Filled by the host and lent
 * to the plugin for the duration of one call. Since 1. */
typedef struct epprof_ep_tensor {
  /* sizeof(epprof_ep_tensor) as the host knows it: fields past `size` bytes
   * are absent. Since 1. */
  size_t size;
  /* An epprof_ep_dtype. EPPROF_EP_DTYPE_UNDEFINED for an omitted optional
   * input, and in node descriptions when the type is not known before run
   * time. Since 1. */
  int32_t dtype;
  /* Number of dims. In node descriptions -1 when the rank is not known
   * before run time; in compute always >= 0 (0: a scalar). Since 1. */
  int32_t rank;
  /* `rank` dims (NULL when rank <= 0). In node descriptions a dim is -1
   * when not known before run time. Since 1. */
  const int64_t* dims;
  /* The elements: host memory, read-only for the plugin. NULL in node
   * descriptions and for omitted inputs. Since 1. */
  const void* data;
  /* Bytes at `data`: element count times element size. Since 1. */
  size_t byte_size;
} epprof_ep_tensor;

/* Attribute kinds, with ONNX AttributeProto.AttributeType numbering.
 * Append-only. */
typedef enum epprof_ep_attr_type {
  EPPROF_EP_ATTR_UNDEFINED = 0, /* a kind this ABI version cannot describe */
  EPPROF_EP_ATTR_FLOAT = 1,
  EPPROF_EP_ATTR_INT = 2,
  EPPROF_EP_ATTR_STRING = 3,
  EPPROF_EP_ATTR_TENSOR = 4,
  EPPROF_EP_ATTR_FLOATS = 6,
  EPPROF_EP_ATTR_INTS = 7,
  EPPROF_EP_ATTR_STRINGS = 8
} epprof_ep_attr_type;

/* One node attribute; read the field its `type` names. Since 1. */
typedef struct epprof_ep_attribute {
  const char* name;             /* never NULL */
  int32_t type;                 /* an epprof_ep_attr_type */
  int32_t reserved;             /* 0 */
  float f;                      /* FLOAT */
  int64_t i;                    /* INT */
  const char* s;                /* STRING, NUL-terminated; NULL otherwise */
  const epprof_ep_tensor* t;    /* TENSOR, with data; NULL otherwise */
  size_t count;                 /* FLOATS, INTS, STRINGS: number of elements */
  const float* floats;          /* FLOATS */
  const int64_t* ints;          /* INTS */
  const char* const* strings;   /* STRINGS */
} epprof_ep_attribute;

/* A graph node as the host knows it before run time. Lent to claims and
 * create_kernel for the call only: copy what the kernel keeps. Since 1. */
typedef struct epprof_ep_node {
  size_t size;         /* sizeof(epprof_ep_node) as the host knows it */
  const char* name;    /* unique in the graph, never empty */
  const char* op_type; /* "MatMul" */
  const char* domain;  /* "" for the default ONNX domain */
  int64_t opset;       /* opset version imported for `domain` */
  uint64_t index;      /* position in the host's topological order */
  /* The node's inputs: dtype and shape as far as known (shape inference,
   * graph inputs, initializers), data NULL. An omitted optional input has
   * dtype UNDEFINED and rank 0. */
  const epprof_ep_tensor* inputs;
  size_t num_inputs;
  /* Number of outputs compute must produce (omitted optional outputs
   * included in the count, never allocated). */
  size_t num_outputs;
  const epprof_ep_attribute* attributes;
  size_t num_attributes;
} epprof_ep_node;

/* The outputs of one compute call, lent by the host for that call. Output
 * shapes are known only to the kernel, so the kernel asks the host for each
 * output buffer. Since 1. */
typedef struct epprof_ep_outputs epprof_ep_outputs;
struct epprof_ep_outputs {
  size_t size;         /* sizeof(epprof_ep_outputs) as the host knows it */
  size_t num_outputs;  /* the node's output count */
  /* Allocates output `index` with `dtype` and `rank` dims (copied; `dims`
   * may be NULL when rank is 0) and stores a pointer to its zeroed host
   * buffer in *out_data (NULL for zero elements). The buffer belongs to
   * the host; write it before compute returns. Allocating an index again
   * replaces the earlier buffer; an omitted optional output may be
   * allocated and is discarded. Returns INVALID_ARGUMENT for an index out
   * of range, a dtype the host cannot store, a negative dim, rank < 0,
   * NULL dims with rank > 0 or NULL out_data; OUT_OF_MEMORY. Call only from
   * inside compute, on its thread. Since 1. */
  epprof_status* (*allocate)(epprof_ep_outputs* self, size_t index, int32_t dtype,
                             const int64_t* dims, int32_t rank, void** out_data);
  void* host_data; /* the host's; the plugin never touches it */
};

typedef struct epprof_ep_plugin epprof_ep_plugin;

/* Implemented by the plugin; returned by the entry function and owned by
 * the plugin until release. */
struct epprof_ep_plugin {
  /* The EPPROF_EP_PLUGIN_ABI_VERSION the plugin was built for. A host
   * refuses a plugin built for a newer version than its own. Since 1. */
  uint32_t abi_version;

  /* The EP's name ("opencl"): NUL-terminated, valid until release. The
   * host shows it as the node's provider. Required. Since 1. */
  const char* name;

  /* Sets *out_claimed to 1 if the plugin runs `node`, else 0. Decide on op
   * type, domain, opset, attributes, input dtypes and shapes; claim only
   * what compute supports for every shape the description allows. An
   * error status means "not claimed": the host logs its message (why the
   * node goes to the next EP) and goes on. Required. Since 1. */
  epprof_status* (*claims)(epprof_ep_plugin* self, const epprof_ep_node* node, int* out_claimed);

  /* Creates the kernel of a claimed node in *out_kernel (an opaque pointer,
   * never NULL on success; the plugin owns it until release_kernel).
   * Statuses: UNSUPPORTED or OUT_OF_MEMORY when the node cannot run on the
   * device after all (the host may run it on another EP and says so);
   * anything else fails session creation with the message. Required.
   * Since 1. */
  epprof_status* (*create_kernel)(epprof_ep_plugin* self, const epprof_ep_node* node,
                                  void** out_kernel);

  /* Runs the kernel on `inputs` (`num_inputs` tensors, data in host memory,
   * read-only, lent for the call) and writes every present output through
   * outputs->allocate. Synchronous: the device work is finished and the
   * results are in the host buffers when it returns. Runs on the node's
   * thread, possibly concurrently with itself (see the top). Statuses:
   * OUT_OF_MEMORY (device memory exhausted) or UNSUPPORTED (these run-time
   * shapes are not supported): the host may run the node on another EP
   * for this call and says so; anything else (PLUGIN_ERROR,
   * INVALID_ARGUMENT) fails the run with an error naming node and plugin.
   * Required. Since 1. */
  epprof_status* (*compute)(epprof_ep_plugin* self, void* kernel, const epprof_ep_tensor* inputs,
                            size_t num_inputs, epprof_ep_outputs* outputs);

  /* Frees a kernel created by create_kernel. May be NULL (kernels that own
   * nothing). Since 1. */
  void (*release_kernel)(epprof_ep_plugin* self, void* kernel);

  /* Creates the EP profiler for one profiling scope (see
   * epprof/ep_profiler.h): the host releases it with its release slot
   * before releasing the plugin. May be called from any thread. May be
   * NULL (the EP reports no device events). Since 1. */
  epprof_status* (*create_profiler)(epprof_ep_plugin* self, epprof_ep_profiler** out);

  /* Frees the plugin. Called once, last. Required. Since 1. */
  void (*release)(epprof_ep_plugin* self);
};

/* The exported entry point. `host` is libepprof's table (statuses, clock,
 * events) and stays valid while the plugin is loaded. `host_abi_version` is
 * the host's EPPROF_EP_PLUGIN_ABI_VERSION; the plugin uses only what that
 * version has. On success store the plugin in *out and return NULL. A
 * plugin that cannot run on this machine (no device) returns UNSUPPORTED
 * with a message saying why; the host then refuses the EP. Called once,
 * from the loading thread. */
typedef epprof_status* (*epprof_ep_plugin_entry_fn)(const epprof_host_api* host,
                                                    uint32_t host_abi_version,
                                                    epprof_ep_plugin** out);

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_EP_PLUGIN_H */
