/* example_plugin.c: the example epprof EP profiler plugin.
 *
 * This is the file an execution-provider (EP) author copies. It is plain C99,
 * includes only the public header epprof/ep_profiler.h and never links
 * libepprof: everything it needs from the host comes through the
 * epprof_host_api table handed to its entry function.
 *
 * What it does, and what a real device plugin does in its place:
 *
 *   - Each profiling scope (a session, a profiled run) gets its own instance
 *     (create_profiler). Instances share nothing.
 *   - start_profiling(offset) records the EP's own clock. This plugin's
 *     "device clock" is CLOCK_MONOTONIC_RAW, deliberately not the host's
 *     clock, so the start-offset conversion below is exercised for real:
 *         event_ts = start_offset_ns + (ep_now - ep_start)
 *   - start_event(id) pushes the correlation id on the calling thread's
 *     stack; a real plugin tags every command it enqueues from now on with
 *     the id on top (CUDA: cuptiActivityPushExternalCorrelationId; OpenCL:
 *     a map from cl_event to id).
 *   - stop_event(id, event) pops it. This plugin simulates the device work
 *     the host event caused: for every host event, one "kernel" occupying
 *     the second half of the event's span as measured on the EP clock (and
 *     kept inside the host's interval), so it lies inside its node. The
 *     kernel is tagged with the id that was on top of the stack and copies
 *     the node's op_name. A real plugin records nothing here; the device
 *     reports its commands asynchronously and they are collected at
 *     end_profiling.
 *   - end_profiling(sink) turns the recorded kernels into host events
 *     (event_create), appends them in batches (sink_append), and describes
 *     its clock and its device track in the trace metadata.
 *
 * For tests of the host's error handling, the environment variable
 *   EPPROF_EXAMPLE_FAIL=start_profiling|start_event|stop_event|end_profiling
 * makes that slot return an EPPROF_PLUGIN_ERROR status (end_profiling fails
 * after appending the first half of its events). EPPROF_EXAMPLE_MEMORY=1
 * gives every kernel a 4096-byte buffer on device "example:0", allocated
 * when it starts and freed when it ends, reported as memory events
 * (EPPROF_CATEGORY_MEMORY); EPPROF_EXAMPLE_MEMORY=leak never frees the
 * buffer of the last kernel of a node (one with an op_name): a deliberate
 * leak, for the host's leak line. EPPROF_EXAMPLE_CLOCK=host
 * makes the "device clock" the host's (host->clock_now_ns), for a trace that
 * a host with a fixed test clock can compare byte for byte. Both are read
 * when an instance is created.
 *
 * Status ownership, the rule to follow everywhere: a status the host returns
 * to us is ours; we either release it (host->status_release) or hand it back
 * as the return value of the slot we are in. A status we return is the
 * host's.
 */

/* clock_gettime, CLOCK_MONOTONIC_RAW and pthreads are POSIX, not C99. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "epprof/ep_profiler.h"

/* The plugin is built with -fvisibility=hidden; only the entry point is
 * exported. */
#define EXAMPLE_EXPORT __attribute__((visibility("default")))

#ifdef CLOCK_MONOTONIC_RAW
#define EXAMPLE_CLOCK_ID CLOCK_MONOTONIC_RAW
#define EXAMPLE_CLOCK_NAME "CLOCK_MONOTONIC_RAW"
#else
#define EXAMPLE_CLOCK_ID CLOCK_MONOTONIC
#define EXAMPLE_CLOCK_NAME "CLOCK_MONOTONIC"
#endif

/* The simulated device has as many queues as the work needs: kernels that
 * overlap in time (nodes of several host threads, a node's kernel inside its
 * model_run's) run on different queues, so no queue's track has slices that
 * overlap. A queue's index is the track id (tid) of its kernel events. */
/* Events created and appended per sink_append call at end_profiling. */
#define EXAMPLE_BATCH 64

/* ------------------------------------------------------------------------
 * The EP clock
 * ---------------------------------------------------------------------- */

/* EPPROF_EXAMPLE_CLOCK=host reads the host's clock instead (host->clock_now_ns),
 * so that a host with a fixed test clock gets a trace that is the same byte
 * for byte on every run: epprof's golden trace test. */
static int64_t ep_clock_now_ns(const epprof_host_api* host_clock) {
  struct timespec ts;
  if (host_clock != NULL) return host_clock->clock_now_ns();
  clock_gettime(EXAMPLE_CLOCK_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

static const epprof_host_api* host_clock_from_env(const epprof_host_api* host) {
  const char* v = getenv("EPPROF_EXAMPLE_CLOCK");
  return v != NULL && strcmp(v, "host") == 0 ? host : NULL;
}

/* ------------------------------------------------------------------------
 * Data
 * ---------------------------------------------------------------------- */

/* Which slot EPPROF_EXAMPLE_FAIL asks to fail. */
typedef enum example_fail_slot {
  FAIL_NONE = 0,
  FAIL_START_PROFILING,
  FAIL_START_EVENT,
  FAIL_STOP_EVENT,
  FAIL_END_PROFILING
} example_fail_slot;

/* One entry of a thread's correlation stack. */
typedef struct stack_entry {
  uint64_t correlation_id;
  int64_t ep_start_ns; /* EP clock when the host event began */
} stack_entry;

/* A thread's correlation-id stack. Only its own thread touches the entries;
 * the instance owns the memory (see `stacks` below). */
typedef struct thread_stack {
  stack_entry* entries;
  size_t size;
  size_t capacity;
  struct thread_stack* next; /* all stacks of an instance, for release */
} thread_stack;

/* One simulated kernel, already on the host's timeline. */
typedef struct example_kernel {
  char* name;    /* "<op_name or event name>_example_kernel", malloc'd */
  char* op_name; /* the host event's op_name arg, malloc'd; NULL if none */
  uint64_t correlation_id;
  int64_t ts_ns;  /* ns since the host's profiling start */
  int64_t dur_ns;
  int queue;     /* assigned at end_profiling */
} example_kernel;

/* The plugin object returned by the entry point. epprof_plugin is its first
 * member, so the host's epprof_plugin* converts back to example_plugin*. */
typedef struct example_plugin {
  epprof_plugin base;
  const epprof_host_api* host;
} example_plugin;

/* One profiler instance (one profiling scope). */
typedef struct example_profiler {
  epprof_ep_profiler base; /* first member: see example_plugin */
  const epprof_host_api* host;
  const epprof_host_api* host_clock; /* non-NULL: the EP clock is the host's */
  example_fail_slot fail;
  int memory; /* EPPROF_EXAMPLE_MEMORY: 0 off, 1 on, 2 leak */

  int64_t start_offset_ns; /* host-timeline ns at start_profiling */
  int64_t ep_start_ns;     /* EP clock at start_profiling */

  /* Per-thread stacks. The key gives the hot path its thread's stack
   * without a lock; the list lets release free every stack, including those
   * of threads that have exited. The key has no destructor: the instance,
   * not the thread, owns the stacks. */
  pthread_key_t stack_key;

  pthread_mutex_t mutex; /* guards `stacks` and `kernels` */
  thread_stack* stacks;
  example_kernel* kernels;
  size_t num_kernels;
  size_t kernel_capacity;
} example_profiler;

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static char* copy_string(const char* s) {
  size_t n = strlen(s) + 1;
  char* copy = (char*)malloc(n);
  if (copy != NULL) memcpy(copy, s, n);
  return copy;
}

static example_fail_slot fail_slot_from_env(void) {
  const char* v = getenv("EPPROF_EXAMPLE_FAIL");
  if (v == NULL) return FAIL_NONE;
  if (strcmp(v, "start_profiling") == 0) return FAIL_START_PROFILING;
  if (strcmp(v, "start_event") == 0) return FAIL_START_EVENT;
  if (strcmp(v, "stop_event") == 0) return FAIL_STOP_EVENT;
  if (strcmp(v, "end_profiling") == 0) return FAIL_END_PROFILING;
  return FAIL_NONE;
}

static int memory_from_env(void) {
  const char* v = getenv("EPPROF_EXAMPLE_MEMORY");
  if (v == NULL) return 0;
  if (strcmp(v, "leak") == 0) return 2;
  return strcmp(v, "1") == 0;
}

static epprof_status* injected_failure(const example_profiler* p, const char* slot) {
  char msg[128];
  snprintf(msg, sizeof msg, "example plugin: %s failed (EPPROF_EXAMPLE_FAIL=%s)", slot, slot);
  return p->host->status_create(EPPROF_PLUGIN_ERROR, msg);
}

static epprof_status* out_of_memory(const example_profiler* p, const char* what) {
  char msg[128];
  snprintf(msg, sizeof msg, "example plugin: out of memory (%s)", what);
  return p->host->status_create(EPPROF_OUT_OF_MEMORY, msg);
}

/* The calling thread's stack, created on the thread's first event. Only that
 * first call takes the mutex and allocates. */
static thread_stack* current_stack(example_profiler* p) {
  thread_stack* s = (thread_stack*)pthread_getspecific(p->stack_key);
  if (s != NULL) return s;
  s = (thread_stack*)calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  if (pthread_setspecific(p->stack_key, s) != 0) {
    free(s);
    return NULL;
  }
  pthread_mutex_lock(&p->mutex);
  s->next = p->stacks;
  p->stacks = s;
  pthread_mutex_unlock(&p->mutex);
  return s;
}

static int stack_push(thread_stack* s, uint64_t id, int64_t ep_now) {
  if (s->size == s->capacity) {
    size_t cap = s->capacity ? s->capacity * 2 : 16;
    stack_entry* grown = (stack_entry*)realloc(s->entries, cap * sizeof *grown);
    if (grown == NULL) return 0;
    s->entries = grown;
    s->capacity = cap;
  }
  s->entries[s->size].correlation_id = id;
  s->entries[s->size].ep_start_ns = ep_now;
  s->size++;
  return 1;
}

/* Converts an EP-clock time to the host's profiling timeline. */
static int64_t to_host_ns(const example_profiler* p, int64_t ep_ns) {
  return p->start_offset_ns + (ep_ns - p->ep_start_ns);
}

/* What stop_event reads from the host event lent to it. */
typedef struct host_event_info {
  const char* name;    /* borrowed from the event */
  const char* op_name; /* borrowed; NULL when the event has no op_name arg */
  int64_t ts_ns;       /* the host's interval, when it reports one (dur_ns > 0) */
  int64_t dur_ns;
} host_event_info;

/* Every accessor returns a status we own; on error we release it and fall
 * back to a neutral value. */
static void read_host_event(const example_profiler* p, const epprof_event* event,
                            host_event_info* info) {
  const epprof_host_api* host = p->host;
  epprof_status* st;
  info->name = "event";
  info->op_name = NULL;
  info->ts_ns = 0;
  info->dur_ns = 0;
  if (event == NULL) return;
  st = host->event_get_name(event, &info->name);
  if (st != NULL) {
    host->status_release(st);
    info->name = "event";
  }
  st = host->event_find_arg(event, "op_name", &info->op_name);
  if (st != NULL) {
    host->status_release(st);
    info->op_name = NULL;
  }
  st = host->event_get_timing(event, &info->ts_ns, &info->dur_ns);
  if (st != NULL) {
    host->status_release(st);
    info->dur_ns = 0;
  }
}

/* Appends a kernel under the mutex. Takes ownership of name and op_name. */
static int append_kernel(example_profiler* p, example_kernel* k) {
  int ok = 1;
  pthread_mutex_lock(&p->mutex);
  if (p->num_kernels == p->kernel_capacity) {
    size_t cap = p->kernel_capacity ? p->kernel_capacity * 2 : 256;
    example_kernel* grown = (example_kernel*)realloc(p->kernels, cap * sizeof *grown);
    if (grown == NULL) {
      ok = 0;
    } else {
      p->kernels = grown;
      p->kernel_capacity = cap;
    }
  }
  if (ok) p->kernels[p->num_kernels++] = *k;
  pthread_mutex_unlock(&p->mutex);
  return ok;
}

/* ------------------------------------------------------------------------
 * EP profiler slots
 * ---------------------------------------------------------------------- */

static epprof_status* example_start_profiling(epprof_ep_profiler* self, int64_t start_offset_ns) {
  example_profiler* p = (example_profiler*)self;
  /* Both clocks are read "now": the host's clock is start_offset_ns into the
   * scope, ours is ep_start_ns. Every later EP time converts with
   *   host_ts = start_offset_ns + (ep_time - ep_start_ns). */
  p->start_offset_ns = start_offset_ns;
  p->ep_start_ns = ep_clock_now_ns(p->host_clock);
  if (p->fail == FAIL_START_PROFILING) return injected_failure(p, "start_profiling");
  return NULL;
}

/* Hot path: no lock, no allocation after the thread's first event (one
 * pthread_getspecific and a vDSO clock read). */
static epprof_status* example_start_event(epprof_ep_profiler* self, uint64_t correlation_id) {
  example_profiler* p = (example_profiler*)self;
  thread_stack* s = current_stack(p);
  if (s == NULL || !stack_push(s, correlation_id, ep_clock_now_ns(p->host_clock)))
    return out_of_memory(p, "correlation stack");
  /* The injected failure still pushes, so stop_event stays consistent and
   * only this slot reports errors. */
  if (p->fail == FAIL_START_EVENT) return injected_failure(p, "start_event");
  return NULL;
}

static epprof_status* example_stop_event(epprof_ep_profiler* self, uint64_t correlation_id,
                                         const epprof_event* event) {
  example_profiler* p = (example_profiler*)self;
  thread_stack* s = (thread_stack*)pthread_getspecific(p->stack_key);
  int64_t ep_stop = ep_clock_now_ns(p->host_clock);
  stack_entry top;
  example_kernel k;
  host_event_info info;
  const char* base_name;
  int64_t start, end;
  size_t len;
  char msg[160];

  /* The host nests events properly per thread, so the event ending is the
   * one on top. Say so if it is not, and change nothing. */
  if (s == NULL || s->size == 0 || s->entries[s->size - 1].correlation_id != correlation_id) {
    snprintf(msg, sizeof msg,
             "example plugin: stop_event(%" PRIu64 ") is not the innermost event of its thread",
             correlation_id);
    return p->host->status_create(EPPROF_FAILED_PRECONDITION, msg);
  }
  top = s->entries[--s->size];

  if (p->fail == FAIL_STOP_EVENT) return injected_failure(p, "stop_event");

  /* The simulated kernel: the second half of the host event as seen on the
   * EP clock, converted with the start-offset formula and tagged with the
   * id that was on top of this thread's stack. Device work cannot outlast
   * the node that waits for it, and a thread may be preempted between the
   * host's end timestamp and this call: when the host reports the event's
   * interval, the span is clipped to it first, so that a preempted call
   * still leaves the kernel half of the event rather than nothing (for an
   * event shorter than the clocks' offset error the host's interval stands
   * in). The kernel ends an eighth of the node before the node does (the
   * host reads its end time after the wait), so that its buffer's free is
   * still the node's after the trace's final clock conversion. */
  read_host_event(p, event, &info);
  start = to_host_ns(p, top.ep_start_ns);
  end = to_host_ns(p, ep_stop);
  if (info.dur_ns > 1) {
    const int64_t last = info.ts_ns + info.dur_ns - 1 - info.dur_ns / 8;
    if (end > last) end = last;
    if (start < info.ts_ns) start = info.ts_ns;
    if (start >= end) {
      start = info.ts_ns;
      end = last;
    }
  }
  start += (end - start) / 2;
  memset(&k, 0, sizeof k);
  k.correlation_id = top.correlation_id;
  k.ts_ns = start;
  k.dur_ns = end - start;
  base_name = info.op_name != NULL ? info.op_name : info.name;
  len = strlen(base_name) + sizeof "_example_kernel";
  k.name = (char*)malloc(len);
  k.op_name = info.op_name != NULL ? copy_string(info.op_name) : NULL;
  if (k.name == NULL || (info.op_name != NULL && k.op_name == NULL)) {
    free(k.name);
    free(k.op_name);
    return out_of_memory(p, "kernel record");
  }
  snprintf(k.name, len, "%s_example_kernel", base_name);
  if (!append_kernel(p, &k)) {
    free(k.name);
    free(k.op_name);
    return out_of_memory(p, "kernel list");
  }
  return NULL;
}

/* Creates the host event for one recorded kernel. */
static epprof_status* make_event(const example_profiler* p, const example_kernel* k,
                                 epprof_event** out) {
  static const char* const keys_with_op[] = {"queue", "op_name"};
  const char* values[2];
  size_t num_args = k->op_name != NULL ? 2 : 1;
  char queue[24];
  snprintf(queue, sizeof queue, "%d", k->queue);
  values[0] = queue;
  values[1] = k->op_name;
  /* pid 0: the host places device tracks in the trace itself. */
  return p->host->event_create(EPPROF_CATEGORY_KERNEL, k->name, 0, k->queue, k->ts_ns,
                               k->dur_ns, k->correlation_id, keys_with_op, values, num_args, out);
}

static int by_start(const void* a, const void* b) {
  const example_kernel* x = (const example_kernel*)a;
  const example_kernel* y = (const example_kernel*)b;
  if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
  return x->dur_ns > y->dur_ns ? -1 : x->dur_ns < y->dur_ns; /* the longer first */
}

/* Sorts the kernels by start and gives each the lowest queue that is free
 * when it starts (interval partitioning: as few queues as the overlap
 * needs). Returns the number of queues, or -1 when out of memory. */
static int assign_queues(example_kernel* kernels, size_t n) {
  int64_t* busy_until = NULL; /* per queue: the end of its last kernel */
  int queues = 0, q;
  size_t i;
  if (n == 0) return 0; /* qsort's array must not be NULL, even when empty */
  qsort(kernels, n, sizeof *kernels, by_start);
  for (i = 0; i < n; ++i) {
    for (q = 0; q < queues && busy_until[q] > kernels[i].ts_ns; ++q) {
    }
    if (q == queues) {
      int64_t* grown = (int64_t*)realloc(busy_until, (size_t)(queues + 1) * sizeof *grown);
      if (grown == NULL) {
        free(busy_until);
        return -1;
      }
      busy_until = grown;
      ++queues;
    }
    busy_until[q] = kernels[i].ts_ns + kernels[i].dur_ns;
    kernels[i].queue = q;
  }
  free(busy_until);
  return queues;
}

static void release_events(const example_profiler* p, epprof_event** events, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) p->host->event_release(events[i]);
}

/* One memory event of kernel `k`'s buffer `id` (EPPROF_EXAMPLE_MEMORY):
 * its allocation when the kernel starts, or its free when it ends. */
static epprof_status* memory_event(const example_profiler* p, const example_kernel* k, size_t id, int alloc,
                                   epprof_event** out) {
  static const char* const keys[] = {"kind", "allocation_id", "bytes", "tag"};
  const char* values[4];
  char id_text[24];
  snprintf(id_text, sizeof id_text, "%lu", (unsigned long)id);
  values[0] = alloc ? "alloc" : "free";
  values[1] = id_text;
  values[2] = "4096";
  values[3] = "temporary";
  return p->host->event_create(EPPROF_CATEGORY_MEMORY, "example:0", 0, k->queue,
                               alloc ? k->ts_ns : k->ts_ns + k->dur_ns, 0, k->correlation_id, keys, values,
                               alloc ? 4 : 2, out);
}

/* Every kernel's buffer, allocated and freed; with "leak", the last node
 * kernel's is never freed. */
static epprof_status* append_memory_events(const example_profiler* p, epprof_event_sink* sink, size_t total) {
  size_t i, leak = total;
  epprof_status* st = NULL;
  if (p->memory == 2)
    for (i = 0; i < total; ++i)
      if (p->kernels[i].op_name != NULL) leak = i;
  for (i = 0; i < total && st == NULL; ++i) {
    epprof_event* ev[2];
    size_t n = 0;
    st = memory_event(p, &p->kernels[i], i + 1, 1, &ev[n]);
    if (st == NULL) ++n;
    if (st == NULL && i != leak) {
      st = memory_event(p, &p->kernels[i], i + 1, 0, &ev[n]);
      if (st == NULL) ++n;
    }
    if (st == NULL) st = p->host->sink_append(sink, (const epprof_event* const*)ev, n);
    release_events(p, ev, n);
  }
  return st;
}

static epprof_status* example_end_profiling(epprof_ep_profiler* self, epprof_event_sink* sink) {
  example_profiler* p = (example_profiler*)self;
  const epprof_host_api* host = p->host;
  epprof_event* batch[EXAMPLE_BATCH];
  epprof_status* st = NULL;
  size_t total, i;
  int queues, q;
  char count[32], track[32];

  /* Every event has ended by now; the lock only orders us after the last
   * stop_event's append. */
  pthread_mutex_lock(&p->mutex);
  total = p->num_kernels;
  pthread_mutex_unlock(&p->mutex);
  /* The injected failure appends the first half, then fails: the host must
   * keep those. */
  if (p->fail == FAIL_END_PROFILING) total /= 2;
  queues = assign_queues(p->kernels, total);
  if (queues < 0) return out_of_memory(p, "queue assignment");

  /* Metadata first, so it is there even if appending fails below. */
  snprintf(count, sizeof count, "%lu", (unsigned long)total);
  st = host->sink_set_metadata(sink, "clock", p->host_clock != NULL ? "host" : EXAMPLE_CLOCK_NAME);
  if (st == NULL) st = host->sink_set_metadata(sink, "events", count);
  for (q = 0; q < queues && st == NULL; ++q) {
    snprintf(track, sizeof track, "example queue %d", q);
    st = host->sink_set_track_name(sink, q, track);
  }
  if (st != NULL) return st; /* the host's status, handed back */

  for (i = 0; i < total;) {
    size_t n = 0;
    while (n < EXAMPLE_BATCH && i < total) {
      st = make_event(p, &p->kernels[i], &batch[n]);
      if (st != NULL) break;
      ++n;
      ++i;
    }
    if (st == NULL)
      st = host->sink_append(sink, (const epprof_event* const*)batch, n);
    /* The sink copied the events; ours are released either way. */
    release_events(p, batch, n);
    if (st != NULL) return st;
  }

  if (p->fail == FAIL_END_PROFILING) return injected_failure(p, "end_profiling");
  return p->memory ? append_memory_events(p, sink, total) : NULL;
}

static void example_profiler_release(epprof_ep_profiler* self) {
  example_profiler* p = (example_profiler*)self;
  thread_stack* s;
  size_t i;
  if (p == NULL) return;
  pthread_key_delete(p->stack_key);
  for (s = p->stacks; s != NULL;) {
    thread_stack* next = s->next;
    free(s->entries);
    free(s);
    s = next;
  }
  for (i = 0; i < p->num_kernels; ++i) {
    free(p->kernels[i].name);
    free(p->kernels[i].op_name);
  }
  free(p->kernels);
  pthread_mutex_destroy(&p->mutex);
  free(p);
}

/* ------------------------------------------------------------------------
 * Plugin slots and entry point
 * ---------------------------------------------------------------------- */

/* A profiler's slots. host_start stays NULL: the plugin reads its own clock
 * and places its events with start_profiling's offset (the version 1 rule). */
static const epprof_ep_profiler example_profiler_slots = {
    .abi_version = EPPROF_EP_ABI_VERSION,
    .start_profiling = example_start_profiling,
    .start_event = example_start_event,
    .stop_event = example_stop_event,
    .end_profiling = example_end_profiling,
    .release = example_profiler_release,
};

static epprof_status* example_create_profiler(epprof_plugin* self, epprof_ep_profiler** out) {
  const example_plugin* plugin = (const example_plugin*)self;
  const epprof_host_api* host = plugin->host;
  example_profiler* p;
  if (out == NULL)
    return host->status_create(EPPROF_INVALID_ARGUMENT, "example plugin: create_profiler: out is NULL");
  p = (example_profiler*)calloc(1, sizeof *p);
  if (p == NULL) return host->status_create(EPPROF_OUT_OF_MEMORY, "example plugin: out of memory");
  if (pthread_key_create(&p->stack_key, NULL) != 0) {
    free(p);
    return host->status_create(EPPROF_RESOURCE_EXHAUSTED,
                               "example plugin: no pthread key left for a new profiler");
  }
  pthread_mutex_init(&p->mutex, NULL);
  p->memory = memory_from_env();
  p->host = host;
  p->fail = fail_slot_from_env();
  p->host_clock = host_clock_from_env(host);
  p->base = example_profiler_slots;
  *out = &p->base;
  return NULL;
}

static void example_plugin_release(epprof_plugin* self) { free(self); }

EXAMPLE_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host,
                                                  uint32_t host_abi_version, epprof_plugin** out);

/* The entry point, exported as EPPROF_PLUGIN_ENTRY_SYMBOL. Called once per
 * load. The host never speaks an ABI older than 1, and a newer host keeps
 * every version-1 slot, so this plugin works with any host >= 1. */
EXAMPLE_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host,
                                                  uint32_t host_abi_version, epprof_plugin** out) {
  example_plugin* plugin;
  /* Without a host table there is no way to create a status: report
   * failure by leaving no plugin. */
  if (host == NULL) {
    if (out != NULL) *out = NULL;
    return NULL;
  }
  if (out == NULL)
    return host->status_create(EPPROF_INVALID_ARGUMENT, "example plugin: entry: out is NULL");
  if (host_abi_version < 1 || host->abi_version < 1)
    return host->status_create(EPPROF_VERSION_MISMATCH,
                               "example plugin: needs a host speaking ABI version 1 or later");
  plugin = (example_plugin*)calloc(1, sizeof *plugin);
  if (plugin == NULL) return host->status_create(EPPROF_OUT_OF_MEMORY, "example plugin: out of memory");
  plugin->host = host;
  plugin->base.abi_version = EPPROF_EP_ABI_VERSION;
  plugin->base.name = "example";
  plugin->base.create_profiler = example_create_profiler;
  plugin->base.release = example_plugin_release;
  *out = &plugin->base;
  return NULL;
}
