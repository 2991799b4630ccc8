/* epprof/ep_profiler.h: the plugin side of epprof.
 *
 * An execution-provider (EP) plugin is a shared library that exports one
 * symbol, EPPROF_PLUGIN_ENTRY_SYMBOL, of type epprof_plugin_entry_fn. The
 * host calls it once with its function table (epprof_host_api); the plugin
 * returns an epprof_plugin. For every profiling scope (a session, a profiled
 * run) the host asks the plugin for a fresh epprof_ep_profiler and drives it:
 *
 *   [host_start(t0)] → start_profiling(offset) → start_event(id) / stop_event(id, event)
 *   (nested per thread, on the thread that runs the event) →
 *   end_profiling(sink) → release
 *
 * Plugins include only this header (and what it includes) and never link
 * against libepprof: everything they need is in epprof_host_api.
 *
 * Timestamps handed to the host are nanoseconds on the host's profiling
 * timeline: event_ts = start_offset_ns + (ep_clock_now - ep_clock_at_start).
 * A plugin that puts its device times on the host clock itself (the host's
 * clock_now_ns) should instead use host_start (version 2): event_ts =
 * host_clock_time - host_start_ns, exact. The first formula is off by the
 * time between the host's clock read for start_offset_ns and the plugin's
 * read of its clock at start -- tens of microseconds when the plugin's code
 * is first touched then, as measured with the OpenCL EP.
 */
#ifndef EPPROF_EP_PROFILER_H
#define EPPROF_EP_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "epprof/event.h"
#include "epprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. Version 1: every slot below
 * marked "Since 1". Version 2 adds epprof_ep_profiler.host_start. */
#define EPPROF_EP_ABI_VERSION 2u

/* The symbol a plugin exports. */
#define EPPROF_PLUGIN_ENTRY_SYMBOL "epprof_plugin_entry"

/* An event: either one a plugin created (owned by the plugin until it calls
 * event_release) or one the host lends to stop_event (valid only during the
 * call, never released by the plugin). Read it through the accessors. */
typedef struct epprof_event epprof_event;

/* An append-only container of plugin events, lent to end_profiling and
 * valid only during that call. */
typedef struct epprof_event_sink epprof_event_sink;

/* Track ids (`tid`) of KERNEL and MEMCPY events name a device track of the
 * plugin (a queue, a stream); the host gives each plugin's tracks their own
 * thread ids in the trace and labels them with sink_set_track_name. Events
 * of other categories keep the pid/tid the plugin gives. */

/* The host's function table. Every slot is non-NULL. All functions are
 * thread-safe unless noted. Statuses returned are owned by the caller. */
typedef struct epprof_host_api {
  /* The host's EPPROF_EP_ABI_VERSION. A plugin uses only slots that exist in
   * that version. Since 1. */
  uint32_t abi_version;

  /* Creates a status (NULL for EPPROF_OK). `message` is copied; may be NULL.
   * Plugins return these from their slots. Since 1. */
  epprof_status* (*status_create)(epprof_status_code code, const char* message);
  /* Releases a status the host returned to the plugin. NULL is a no-op. Since 1. */
  void (*status_release)(epprof_status* status);
  /* Code and message (never NULL) of a status; borrowed. Since 1. */
  epprof_status_code (*status_get_code)(const epprof_status* status);
  const char* (*status_get_message)(const epprof_status* status);

  /* The host clock: monotonic nanoseconds. Since 1. */
  int64_t (*clock_now_ns)(void);

  /* Creates an event. `name` and every key and value are copied.
   *   category: an epprof_category below EPPROF_CATEGORY_COUNT_.
   *   ts_ns: start, ns since the host's profiling start (see the formula above).
   *   dur_ns: duration in ns, >= 0.
   *   correlation_id: the host event that caused this one (the top of the
   *     issuing thread's start_event stack), or 0 for none.
   *   arg_keys/arg_values: `num_args` NUL-terminated strings each; may be
   *     NULL only when num_args is 0.
   * Returns INVALID_ARGUMENT, naming the problem, for a NULL name or `out`,
   * an unknown category, a negative duration, NULL arrays with a non-zero
   * count, or a NULL key or value; `*out` is then untouched. OUT_OF_MEMORY
   * if allocation fails. Release the event with event_release. Since 1. */
  epprof_status* (*event_create)(epprof_category category, const char* name, int64_t pid,
                                 int64_t tid, int64_t ts_ns, int64_t dur_ns,
                                 uint64_t correlation_id, const char* const* arg_keys,
                                 const char* const* arg_values, size_t num_args,
                                 epprof_event** out);
  /* Releases an event the plugin created. NULL is a no-op. Never call it on
   * the event lent to stop_event. Since 1. */
  void (*event_release)(epprof_event* event);

  /* Accessors. Each returns INVALID_ARGUMENT for a NULL event or out
   * pointer. Strings are borrowed from the event. Since 1. */
  epprof_status* (*event_get_category)(const epprof_event* event, epprof_category* out);
  epprof_status* (*event_get_name)(const epprof_event* event, const char** out);
  epprof_status* (*event_get_timing)(const epprof_event* event, int64_t* ts_ns, int64_t* dur_ns);
  epprof_status* (*event_get_correlation_id)(const epprof_event* event, uint64_t* out);
  epprof_status* (*event_arg_count)(const epprof_event* event, size_t* out);
  /* The index-th arg; INVALID_ARGUMENT when index >= the arg count. */
  epprof_status* (*event_get_arg)(const epprof_event* event, size_t index, const char** key,
                                  const char** value);
  /* The value of arg `key`, or NULL in *value when the event has none. */
  epprof_status* (*event_find_arg)(const epprof_event* event, const char* key,
                                   const char** value);

  /* Appends copies of `num_events` events to the sink. The batch is
   * validated whole first: a NULL sink, a NULL array with a non-zero count
   * or a NULL element returns INVALID_ARGUMENT and appends nothing. An empty
   * batch is a no-op. The plugin still owns (and releases) its events. Call
   * only from inside end_profiling, on the thread that called it. Since 1. */
  epprof_status* (*sink_append)(epprof_event_sink* sink, const epprof_event* const* events,
                                size_t num_events);
  /* Records a key/value pair in the trace metadata under this plugin's name
   * (clock calibration, dropped device records, ...). Both strings are
   * copied; a later value for the same key replaces the earlier one.
   * INVALID_ARGUMENT for NULL arguments. Same thread rule as sink_append.
   * Since 1. */
  epprof_status* (*sink_set_metadata)(epprof_event_sink* sink, const char* key, const char* value);
  /* Names device track `tid` of this plugin ("queue 0", "stream 7").
   * INVALID_ARGUMENT for NULL arguments. Same thread rule. Since 1. */
  epprof_status* (*sink_set_track_name)(epprof_event_sink* sink, int64_t tid, const char* name);
} epprof_host_api;

typedef struct epprof_ep_profiler epprof_ep_profiler;

/* Implemented by the plugin; one instance per profiling scope. The host
 * calls the slots of one instance in the order start_profiling, then any
 * number of start_event/stop_event pairs (concurrently from several
 * threads, properly nested per thread), then end_profiling once, then
 * release. A slot returning an error is logged once per slot kind and
 * recorded in the trace metadata; profiling goes on. */
struct epprof_ep_profiler {
  /* The EPPROF_EP_ABI_VERSION the plugin was built for. Since 1. */
  uint32_t abi_version;

  /* Profiling starts. `start_offset_ns` is the host-clock time elapsed
   * between the host's profiling start and this call; record the EP clock
   * now. Called once, on the thread that starts the scope. Required. Since 1. */
  epprof_status* (*start_profiling)(epprof_ep_profiler* self, int64_t start_offset_ns);

  /* A host event with `correlation_id` begins on the calling thread: push
   * it on that thread's stack, and tag device work issued from now on with
   * it. Called on the hot path: keep it short and do not block. May be NULL.
   * Since 1. */
  epprof_status* (*start_event)(epprof_ep_profiler* self, uint64_t correlation_id);

  /* The host event ends on the calling thread; pop it. `event` (name, op
   * args) is lent for the call only. May be NULL. Since 1. */
  epprof_status* (*stop_event)(epprof_ep_profiler* self, uint64_t correlation_id,
                               const epprof_event* event);

  /* Profiling ends: append every event recorded since start_profiling to
   * `sink` with host_api->sink_append. Events appended before an error
   * return are kept. Required. Since 1. */
  epprof_status* (*end_profiling)(epprof_ep_profiler* self, epprof_event_sink* sink);

  /* Frees the instance. Called once, last. Required. Since 1. */
  void (*release)(epprof_ep_profiler* self);

  /* The host's profiling start on the host clock (epprof_host_api
   * clock_now_ns): an event at host clock time t has ts_ns = t -
   * host_start_ns. Called once, just before start_profiling, on the same
   * thread; only when abi_version >= 2. May be NULL. Since 2. */
  epprof_status* (*host_start)(epprof_ep_profiler* self, int64_t host_start_ns);
};

typedef struct epprof_plugin epprof_plugin;

/* What the entry function returns; owned by the plugin until release. */
struct epprof_plugin {
  /* The EPPROF_EP_ABI_VERSION the plugin was built for. The host refuses a
   * plugin built for a newer version than its own. Since 1. */
  uint32_t abi_version;
  /* The EP's name ("example", "opencl"): NUL-terminated, valid until
   * release. Required. Since 1. */
  const char* name;
  /* Creates a new profiler instance for one profiling scope; the host
   * releases it with its release slot. May be called from any thread.
   * Required. Since 1. */
  epprof_status* (*create_profiler)(epprof_plugin* self, epprof_ep_profiler** out);
  /* Frees the plugin after every profiler it created was released. Required.
   * Since 1. */
  void (*release)(epprof_plugin* self);
};

/* The exported entry point. `host` stays valid while the plugin is loaded.
 * `host_abi_version` is the host's EPPROF_EP_ABI_VERSION. On success store
 * the plugin in *out and return NULL. Called once, from the loading thread. */
typedef epprof_status* (*epprof_plugin_entry_fn)(const epprof_host_api* host,
                                                 uint32_t host_abi_version, epprof_plugin** out);

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_EP_PROFILER_H */
