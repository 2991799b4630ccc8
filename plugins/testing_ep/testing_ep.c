/* testing_ep.c: a tiny EP plugin (epprof/ep_plugin.h) for the runtime's
 * plugin tests, in plain C99 against the public headers only.
 *
 * It claims Relu and Add on float32 (Add only for inputs of one known
 * shape), computes them on the host, and its EP profiler records one
 * KERNEL event per compute, tagged with the correlation id on top of the
 * computing thread's stack, for every profiler instance active then.
 *
 * Variants for the host's error handling, chosen at compile time:
 *   TESTING_EP_NEWER_ABI     the plugin claims an ABI newer than the host's
 *   TESTING_EP_MISSING_SLOT  compute is NULL
 *   TESTING_EP_NO_ENTRY      the entry symbol is not exported
 * and at run time: EPPROF_TESTING_EP_FAIL=compute (read at create_kernel)
 * makes every compute of the kernels created then return PLUGIN_ERROR.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "epprof/ep_plugin.h"

#define TESTING_EXPORT __attribute__((visibility("default")))
#define TESTING_QUEUE 0

/* ---- The EP's clock: deliberately not the host's, so the start-offset
 * formula is exercised. ---- */
static int64_t ep_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

typedef struct kernel_record {
  uint64_t correlation_id;
  int64_t ep_start, ep_end;
  const char* name; /* static storage */
} kernel_record;

typedef struct thread_stack {
  uint64_t* ids;
  size_t size, capacity;
  struct thread_stack* next;
} thread_stack;

struct testing_plugin;

typedef struct testing_profiler {
  epprof_ep_profiler base; /* first member */
  struct testing_plugin* plugin;
  int64_t start_offset_ns, ep_start_ns;
  pthread_key_t stack_key; /* this instance's stack of the calling thread */
  thread_stack* stacks;    /* every stack, for release; under plugin->mutex */
  kernel_record* records;  /* under plugin->mutex */
  size_t num_records, capacity;
  int active;                      /* in plugin->profilers */
  struct testing_profiler* next;   /* in plugin->profilers */
} testing_profiler;

typedef struct testing_plugin {
  epprof_ep_plugin base; /* first member */
  const epprof_host_api* host;
  /* Guards the list of active profilers and their stacks and records.
   * Taken once per compute: fine for a test EP. */
  pthread_mutex_t mutex;
  testing_profiler* profilers;
} testing_plugin;

enum { OP_RELU, OP_ADD };

typedef struct testing_kernel {
  int op;
  int fail;
} testing_kernel;

static epprof_status* error(const testing_plugin* p, epprof_status_code code, const char* msg) {
  return p->host->status_create(code, msg);
}

/* ---- Kernels ---- */

static int is_float(const epprof_ep_tensor* t) { return t->dtype == EPPROF_EP_DTYPE_FLOAT; }

static int same_known_shape(const epprof_ep_tensor* a, const epprof_ep_tensor* b) {
  int32_t i;
  if (a->rank < 0 || a->rank != b->rank) return 0;
  for (i = 0; i < a->rank; ++i)
    if (a->dims[i] < 0 || a->dims[i] != b->dims[i]) return 0;
  return 1;
}

static epprof_status* testing_claims(epprof_ep_plugin* self, const epprof_ep_node* node,
                                     int* out_claimed) {
  *out_claimed = 0;
  (void)self;
  if (node->domain[0] != '\0' || node->num_outputs != 1) return NULL;
  if (strcmp(node->op_type, "Relu") == 0 && node->num_inputs == 1)
    *out_claimed = is_float(&node->inputs[0]);
  else if (strcmp(node->op_type, "Add") == 0 && node->num_inputs == 2)
    *out_claimed = is_float(&node->inputs[0]) && is_float(&node->inputs[1]) &&
                   same_known_shape(&node->inputs[0], &node->inputs[1]);
  return NULL;
}

static epprof_status* testing_create_kernel(epprof_ep_plugin* self, const epprof_ep_node* node,
                                            void** out_kernel) {
  testing_plugin* p = (testing_plugin*)self;
  const char* fail = getenv("EPPROF_TESTING_EP_FAIL");
  testing_kernel* k = (testing_kernel*)calloc(1, sizeof *k);
  if (k == NULL) return error(p, EPPROF_OUT_OF_MEMORY, "testing EP: out of memory");
  k->op = strcmp(node->op_type, "Add") == 0 ? OP_ADD : OP_RELU;
  k->fail = fail != NULL && strcmp(fail, "compute") == 0;
  *out_kernel = k;
  return NULL;
}

static void testing_release_kernel(epprof_ep_plugin* self, void* kernel) {
  (void)self;
  free(kernel);
}

/* Records one kernel for every active profiler whose stack on this thread
 * is not empty, tagged with the id on its top. */
static void record_kernel(testing_plugin* p, const char* name, int64_t start, int64_t end) {
  testing_profiler* prof;
  pthread_mutex_lock(&p->mutex);
  for (prof = p->profilers; prof != NULL; prof = prof->next) {
    thread_stack* s = (thread_stack*)pthread_getspecific(prof->stack_key);
    if (s == NULL || s->size == 0) continue;
    if (prof->num_records == prof->capacity) {
      size_t cap = prof->capacity ? prof->capacity * 2 : 64;
      kernel_record* grown = (kernel_record*)realloc(prof->records, cap * sizeof *grown);
      if (grown == NULL) continue; /* the event is lost; results are not */
      prof->records = grown;
      prof->capacity = cap;
    }
    prof->records[prof->num_records].correlation_id = s->ids[s->size - 1];
    prof->records[prof->num_records].ep_start = start;
    prof->records[prof->num_records].ep_end = end;
    prof->records[prof->num_records].name = name;
    prof->num_records++;
  }
  pthread_mutex_unlock(&p->mutex);
}

static epprof_status* testing_compute(epprof_ep_plugin* self, void* kernel,
                                      const epprof_ep_tensor* inputs, size_t num_inputs,
                                      epprof_ep_outputs* outputs) {
  testing_plugin* p = (testing_plugin*)self;
  const testing_kernel* k = (const testing_kernel*)kernel;
  const float* a;
  const float* b;
  float* y = NULL;
  size_t n, i;
  int64_t start = ep_now_ns();
  epprof_status* st;
  if (k->fail) return error(p, EPPROF_PLUGIN_ERROR, "testing EP: injected compute failure");
  if (num_inputs != (k->op == OP_ADD ? 2u : 1u) || !is_float(&inputs[0]))
    return error(p, EPPROF_INVALID_ARGUMENT, "testing EP: wrong inputs");
  if (k->op == OP_ADD && (!is_float(&inputs[1]) || !same_known_shape(&inputs[0], &inputs[1])))
    return error(p, EPPROF_UNSUPPORTED, "testing EP: Add needs two float inputs of one shape");
  st = outputs->allocate(outputs, 0, EPPROF_EP_DTYPE_FLOAT, inputs[0].dims, inputs[0].rank,
                         (void**)&y);
  if (st != NULL) return st;
  n = inputs[0].byte_size / sizeof(float);
  a = (const float*)inputs[0].data;
  b = k->op == OP_ADD ? (const float*)inputs[1].data : NULL;
  for (i = 0; i < n; ++i) y[i] = b != NULL ? a[i] + b[i] : (a[i] > 0.0f ? a[i] : 0.0f);
  record_kernel(p, k->op == OP_ADD ? "testing_add" : "testing_relu", start, ep_now_ns());
  return NULL;
}

/* ---- EP profiler ---- */

static epprof_status* prof_start_profiling(epprof_ep_profiler* self, int64_t start_offset_ns) {
  testing_profiler* prof = (testing_profiler*)self;
  testing_plugin* p = prof->plugin;
  prof->start_offset_ns = start_offset_ns;
  prof->ep_start_ns = ep_now_ns();
  pthread_mutex_lock(&p->mutex);
  prof->next = p->profilers;
  p->profilers = prof;
  prof->active = 1;
  pthread_mutex_unlock(&p->mutex);
  return NULL;
}

static thread_stack* current_stack(testing_profiler* prof) {
  thread_stack* s = (thread_stack*)pthread_getspecific(prof->stack_key);
  if (s != NULL) return s;
  s = (thread_stack*)calloc(1, sizeof *s);
  if (s == NULL || pthread_setspecific(prof->stack_key, s) != 0) {
    free(s);
    return NULL;
  }
  pthread_mutex_lock(&prof->plugin->mutex);
  s->next = prof->stacks;
  prof->stacks = s;
  pthread_mutex_unlock(&prof->plugin->mutex);
  return s;
}

static epprof_status* prof_start_event(epprof_ep_profiler* self, uint64_t correlation_id) {
  testing_profiler* prof = (testing_profiler*)self;
  thread_stack* s = current_stack(prof);
  if (s != NULL && s->size == s->capacity) {
    size_t cap = s->capacity ? s->capacity * 2 : 16;
    uint64_t* grown = (uint64_t*)realloc(s->ids, cap * sizeof *grown);
    if (grown == NULL) s = NULL;
    else {
      s->ids = grown;
      s->capacity = cap;
    }
  }
  if (s == NULL) return error(prof->plugin, EPPROF_OUT_OF_MEMORY, "testing EP: correlation stack");
  s->ids[s->size++] = correlation_id;
  return NULL;
}

static epprof_status* prof_stop_event(epprof_ep_profiler* self, uint64_t correlation_id,
                                      const epprof_event* event) {
  testing_profiler* prof = (testing_profiler*)self;
  thread_stack* s = (thread_stack*)pthread_getspecific(prof->stack_key);
  (void)event;
  if (s == NULL || s->size == 0 || s->ids[s->size - 1] != correlation_id)
    return error(prof->plugin, EPPROF_FAILED_PRECONDITION,
                 "testing EP: stop_event is not the innermost event of its thread");
  s->size--;
  return NULL;
}

static void deactivate(testing_profiler* prof) {
  testing_profiler** link;
  pthread_mutex_lock(&prof->plugin->mutex);
  for (link = &prof->plugin->profilers; prof->active && *link != NULL; link = &(*link)->next) {
    if (*link == prof) {
      *link = prof->next;
      prof->active = 0;
      break;
    }
  }
  pthread_mutex_unlock(&prof->plugin->mutex);
}

static epprof_status* prof_end_profiling(epprof_ep_profiler* self, epprof_event_sink* sink) {
  testing_profiler* prof = (testing_profiler*)self;
  const epprof_host_api* host = prof->plugin->host;
  static const char* const keys[] = {"queue"};
  static const char* const values[] = {"0"};
  epprof_status* st;
  size_t i;
  deactivate(prof); /* no compute records into it from now on */
  st = host->sink_set_track_name(sink, TESTING_QUEUE, "testing EP host queue");
  for (i = 0; st == NULL && i < prof->num_records; ++i) {
    const kernel_record* r = &prof->records[i];
    epprof_event* ev = NULL;
    st = host->event_create(EPPROF_CATEGORY_KERNEL, r->name, 0, TESTING_QUEUE,
                            prof->start_offset_ns + (r->ep_start - prof->ep_start_ns),
                            r->ep_end - r->ep_start, r->correlation_id, keys, values, 1, &ev);
    if (st == NULL) st = host->sink_append(sink, (const epprof_event* const*)&ev, 1);
    host->event_release(ev);
  }
  return st;
}

static void prof_release(epprof_ep_profiler* self) {
  testing_profiler* prof = (testing_profiler*)self;
  thread_stack* s = prof->stacks;
  deactivate(prof);
  while (s != NULL) {
    thread_stack* next = s->next;
    free(s->ids);
    free(s);
    s = next;
  }
  pthread_key_delete(prof->stack_key);
  free(prof->records);
  free(prof);
}

static epprof_status* testing_create_profiler(epprof_ep_plugin* self, epprof_ep_profiler** out) {
  testing_plugin* p = (testing_plugin*)self;
  testing_profiler* prof = (testing_profiler*)calloc(1, sizeof *prof);
  if (prof == NULL) return error(p, EPPROF_OUT_OF_MEMORY, "testing EP: out of memory");
  if (pthread_key_create(&prof->stack_key, NULL) != 0) {
    free(prof);
    return error(p, EPPROF_RESOURCE_EXHAUSTED, "testing EP: no pthread key left");
  }
  prof->plugin = p;
  prof->base.abi_version = EPPROF_EP_ABI_VERSION;
  prof->base.start_profiling = prof_start_profiling;
  prof->base.start_event = prof_start_event;
  prof->base.stop_event = prof_stop_event;
  prof->base.end_profiling = prof_end_profiling;
  prof->base.release = prof_release;
  *out = &prof->base;
  return NULL;
}

/* ---- Plugin ---- */

static void testing_release(epprof_ep_plugin* self) {
  testing_plugin* p = (testing_plugin*)self;
  pthread_mutex_destroy(&p->mutex);
  free(p);
}

#ifndef TESTING_EP_NO_ENTRY
TESTING_EXPORT epprof_status* epprof_ep_plugin_entry(const epprof_host_api* host,
                                                     uint32_t host_abi_version,
                                                     epprof_ep_plugin** out);
#endif

#ifdef TESTING_EP_NO_ENTRY
static
#else
TESTING_EXPORT
#endif
epprof_status* epprof_ep_plugin_entry(const epprof_host_api* host, uint32_t host_abi_version,
                                      epprof_ep_plugin** out) {
  testing_plugin* p;
  if (host == NULL || out == NULL) return NULL;
  if (host_abi_version < 1)
    return host->status_create(EPPROF_VERSION_MISMATCH, "testing EP: needs EP plugin ABI 1");
  p = (testing_plugin*)calloc(1, sizeof *p);
  if (p == NULL) return host->status_create(EPPROF_OUT_OF_MEMORY, "testing EP: out of memory");
  pthread_mutex_init(&p->mutex, NULL);
  p->host = host;
#ifdef TESTING_EP_NEWER_ABI
  p->base.abi_version = EPPROF_EP_PLUGIN_ABI_VERSION + 1;
#else
  p->base.abi_version = EPPROF_EP_PLUGIN_ABI_VERSION;
#endif
  p->base.name = "testing";
  p->base.claims = testing_claims;
  p->base.create_kernel = testing_create_kernel;
#ifdef TESTING_EP_MISSING_SLOT
  (void)testing_compute; /* the variant leaves the slot NULL */
#else
  p->base.compute = testing_compute;
#endif
  p->base.release_kernel = testing_release_kernel;
  p->base.create_profiler = testing_create_profiler;
  p->base.release = testing_release;
  *out = &p->base;
  return NULL;
}

#ifdef TESTING_EP_NO_ENTRY
/* Keeps the static entry referenced, so -Werror=unused-function is quiet. */
TESTING_EXPORT epprof_ep_plugin_entry_fn testing_ep_not_the_entry(void);
TESTING_EXPORT epprof_ep_plugin_entry_fn testing_ep_not_the_entry(void) {
  return epprof_ep_plugin_entry;
}
#endif
