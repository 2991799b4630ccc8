/* epprof/event.h: event categories, interned names and key/value args,
 * shared by hosts and plugins. */
#ifndef EPPROF_EVENT_H
#define EPPROF_EVENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Event categories. The first four have ONNX Runtime's numbering
 * (OrtProfilingEventCategory); the enum is append-only. */
typedef enum epprof_category {
  EPPROF_CATEGORY_SESSION = 0, /* session lifetime: model loading, initialization, runs */
  EPPROF_CATEGORY_NODE = 1,    /* one execution of one graph node */
  EPPROF_CATEGORY_KERNEL = 2,  /* device work: a kernel or command on a device */
  EPPROF_CATEGORY_API = 3,     /* a call into a driver or runtime API */
  EPPROF_CATEGORY_MEMCPY = 4,  /* a host/device or device/device transfer */
  EPPROF_CATEGORY_COUNTER = 5, /* counter values read around a dispatch */
  EPPROF_CATEGORY_MEMORY = 6,  /* plugins only: a device allocation or free, as an event of
                                * duration 0 whose name is the device ("opencl:0") and whose
                                * args are "kind" ("alloc" or "free"), "allocation_id" and,
                                * for an allocation, "bytes" (decimal), and optionally "tag"
                                * (output, temporary, initializer, input, arena_chunk, other);
                                * attributed by its correlation_id. Hosts report their own
                                * memory with epprof_memory_alloc / _free instead. */
  EPPROF_CATEGORY_COUNT_ = 7   /* number of categories in this ABI version; not a category */
} epprof_category;

/* An interned string. 0 is never a valid id. Ids are process-wide and stay
 * valid for the life of the process. */
typedef uint32_t epprof_name_id;

/* An interned list of args (epprof_arg_set_intern in epprof/profiler.h).
 * 0 is never a valid id. Ids are process-wide and stay valid for the life
 * of the process. */
typedef uint32_t epprof_arg_set_id;

/* Type of an argument value. Append-only. */
typedef enum epprof_arg_type {
  EPPROF_ARG_STRING = 0, /* value.str: a NUL-terminated string, exported as a JSON string */
  EPPROF_ARG_INT64 = 1,  /* value.i64, exported as a JSON string of its decimal digits
                            (ONNX Runtime writes every arg as a string) */
  EPPROF_ARG_JSON = 2,   /* value.str: raw JSON text, exported unquoted (as ONNX Runtime
                            does for input_type_shape). Text that is not valid JSON is
                            exported as a string instead, so the trace stays valid. */
  EPPROF_ARG_NAME = 3,   /* value.name: an interned string (epprof_intern), exported as
                            STRING is. For values a host repeats on every event (an op
                            type, a provider): the event stores the 4-byte id and copies
                            no text, which keeps recording cheap. */
  EPPROF_ARG_JSON_NAME = 4, /* value.name: interned raw JSON text, exported as JSON is */
  EPPROF_ARG_SET = 5        /* value.set: an arg set; `key` must be 0. The set's args are
                               exported in this arg's place, in their order. For the args a
                               host attaches unchanged to every execution of one node (op
                               type, provider, shapes): the event stores the 4-byte id and
                               ending it validates one id, however many args the set holds.
                               Sets do not nest. */
} epprof_arg_type;

/* One key/value argument of a host event. Borrowed by the function it is
 * passed to; epprof copies what it keeps before returning. */
typedef struct epprof_arg {
  epprof_name_id key;   /* interned with epprof_intern() */
  uint32_t type;        /* an epprof_arg_type */
  union {
    int64_t i64;
    const char* str;      /* must not be NULL for STRING and JSON */
    epprof_name_id name;  /* must be an interned id for NAME and JSON_NAME */
    epprof_arg_set_id set; /* must be an id from epprof_arg_set_intern for SET */
  } value;
} epprof_arg;

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_EVENT_H */
