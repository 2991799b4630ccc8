/* epprof/profiler.h: the host side of epprof.
 *
 * A host (an inference runtime, an engine, a test) embeds libepprof through
 * these functions. A profiler is one profiling scope (a session, a run):
 * it records the host events of every thread between start and stop, drives
 * the EP profilers of the plugins added to it, and at stop merges
 * everything into one trace file. Several profilers may be active at once;
 * each receives the events the host sends to it.
 *
 * Handles (epprof_profiler_t, epprof_plugin_t) are plain values checked on
 * every call: an unknown or destroyed handle returns EPPROF_NOT_FOUND. The
 * zero profiler handle is the disabled profiler: every event call on it is
 * a no-op that returns NULL, so a host can keep one code path.
 */
#ifndef EPPROF_PROFILER_H
#define EPPROF_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "epprof/ep_profiler.h"
#include "epprof/event.h"
#include "epprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library version, "MAJOR.MINOR.PATCH". Static storage. */
EPPROF_API const char* epprof_version(void);

/* ---- Process-wide services. All are thread-safe. ---- */

/* Interns `str` (copied) and stores its id in *out; the same string always
 * gets the same id. Not for the hot path: intern names once, up front.
 * Returns INVALID_ARGUMENT for NULL `str` or `out`, RESOURCE_EXHAUSTED after
 * 2^22 distinct strings, OUT_OF_MEMORY. */
EPPROF_API epprof_status* epprof_intern(const char* str, epprof_name_id* out);

/* As epprof_intern, for the `len` bytes at `str`, which may hold NUL bytes
 * (names are byte strings: an ONNX node name may hold any byte). The trace
 * writes every byte, escaped. `str` may be NULL only when `len` is 0. */
EPPROF_API epprof_status* epprof_intern_n(const char* str, size_t len, epprof_name_id* out);

/* Interns a copy of `args` (at most 32; none of type EPPROF_ARG_SET) as an
 * arg set and stores its id in *out; the same list always gets the same id.
 * An event then carries the whole list as one arg,
 * {0, EPPROF_ARG_SET, {.set = id}}, which is what keeps ending an event with
 * many args cheap. Not for the hot path: intern a set once per distinct
 * list (per node and shapes, say). Returns INVALID_ARGUMENT for NULL `out`,
 * NULL `args` with num_args > 0, more than 32 args, a key or NAME value
 * that is not interned, an unknown type, a NULL string, or a nested set;
 * RESOURCE_EXHAUSTED after 2^20 distinct sets or when a long string value
 * finds the string table full; OUT_OF_MEMORY. */
EPPROF_API epprof_status* epprof_arg_set_intern(const epprof_arg* args, size_t num_args, epprof_arg_set_id* out);

/* A graph node, as a host declares it to attribution
 * (epprof_node_args_intern). A growable struct: the caller sets `size` to
 * sizeof(epprof_node_desc) as it was compiled, and fields added later are
 * read only when `size` covers them. */
typedef struct epprof_node_desc {
  size_t size;            /* sizeof(epprof_node_desc) */
  epprof_name_id name;    /* the node's name in its graph; interned */
  epprof_name_id op_type; /* its operator ("Conv"); interned */
  uint32_t index;         /* its index in the graph */
  epprof_name_id ep;      /* the execution provider that runs it
                           * ("CPUExecutionProvider"), interned; 0: not said */
} epprof_node_desc;

/* As epprof_arg_set_intern, and the set also says which graph node an event
 * that carries it executes. A NODE event whose own args hold such a set
 * (the first one counts) is that node's execution, whatever the event is
 * named: the device events it causes are attributed to it with the node's
 * op type and index (trace args op_name and node_index; session records'
 * node, op_type and node_index), and trace filters judge it by the node's
 * name, op type and provider. A NODE event without one is attributed by its
 * event name alone (parent_name). The set's args are the event's args as
 * the trace writes them, whatever they are: the node is not read from them. The same list and node always get the
 * same id; the same list with another node, or none, gets another. Not for
 * the hot path: intern once per node (and shapes). Returns what
 * epprof_arg_set_intern returns, and INVALID_ARGUMENT for NULL `node`, a
 * `size` smaller than the struct's first version, or a name, op type or
 * (nonzero) ep that is not interned. */
EPPROF_API epprof_status* epprof_node_args_intern(const epprof_node_desc* node, const epprof_arg* args,
                                                  size_t num_args, epprof_arg_set_id* out);

/* The string of an interned id, or NULL for an id never returned by
 * epprof_intern. Borrowed; valid for the life of the process. */
EPPROF_API const char* epprof_name(epprof_name_id id);

/* A new correlation id: unique within the process, never 0, never reused,
 * cheap enough for the hot path (no lock, no syscall). */
EPPROF_API uint64_t epprof_correlation_id_next(void);

/* Reserves `count` consecutive correlation ids and returns the first: ids
 * first .. first + count - 1 are the caller's, and no other call returns
 * any of them. For a host that numbers a batch itself (a run's node
 * executions: one call per run instead of one per node). Returns 0 when
 * count is 0 or above 2^48. No lock; a syscall never. */
EPPROF_API uint64_t epprof_correlation_id_block(uint64_t count);

/* The host clock: monotonic nanoseconds (CLOCK_MONOTONIC's epoch). */
EPPROF_API int64_t epprof_clock_now_ns(void);

/* For a host's signal handler that is about to _exit (a second Ctrl-C):
 * removes the temporary files of traces being written now, so that none is
 * left beside the trace path. A trace is written to an unnamed temporary
 * (O_TMPFILE) that needs no removal, except for an instant while it is
 * renamed into place and where the file system cannot create one; this
 * covers those. Async-signal-safe; may be called from any thread, at any
 * time, any number of times. Traces being written are lost, as they would
 * be on _exit anyway. */
EPPROF_API void epprof_remove_temporary_files(void);

/* Names the calling thread's track in traces written from now on ("main",
 * "worker 3"). `name` is copied. INVALID_ARGUMENT for NULL. */
EPPROF_API epprof_status* epprof_set_thread_name(const char* name);

/* Where epprof's warnings go (a plugin error, dropped events). The callback
 * may be called from any thread, must not block, and must not call back
 * into epprof. NULL restores the default: one line on stderr. */
typedef void (*epprof_log_fn)(void* user_data, epprof_status_code code, const char* message);
EPPROF_API void epprof_set_log_callback(epprof_log_fn fn, void* user_data);

/* ---- Plugins ---- */

typedef struct epprof_plugin_t {
  uint64_t handle;
} epprof_plugin_t;

/* The host function table handed to plugins; useful to a host that links a
 * plugin into its own binary and calls its entry function itself. Static
 * storage; never NULL. */
EPPROF_API const epprof_host_api* epprof_get_host_api(void);

/* Loads the plugin shared library at `path`, calls its entry function and
 * checks what it returns. Returns:
 *   INVALID_ARGUMENT  NULL path or out;
 *   NOT_FOUND         the file cannot be loaded or lacks the entry symbol
 *                     (the message carries the loader's reason);
 *   VERSION_MISMATCH  the plugin was built for a newer ABI (both versions named);
 *   PLUGIN_ERROR      the entry function failed, or returned a plugin without
 *                     a name or a required slot (named);
 *   RESOURCE_EXHAUSTED too many plugins loaded.
 * On any error nothing stays loaded. Thread-safe. */
EPPROF_API epprof_status* epprof_plugin_load(const char* path, epprof_plugin_t* out);

/* Registers a plugin object the host obtained itself (a plugin linked into
 * the host). epprof takes ownership and calls its release slot at unload.
 * Same checks and statuses as epprof_plugin_load. */
EPPROF_API epprof_status* epprof_plugin_register(epprof_plugin* plugin, epprof_plugin_t* out);

/* The plugin's name, borrowed until unload. NOT_FOUND for a stale handle. */
EPPROF_API epprof_status* epprof_plugin_get_name(epprof_plugin_t plugin, const char** out);

/* Releases the plugin and unloads its library. FAILED_PRECONDITION while a
 * profiler that uses it exists; NOT_FOUND for a stale handle. */
EPPROF_API epprof_status* epprof_plugin_unload(epprof_plugin_t plugin);

/* ---- Profilers ---- */

typedef struct epprof_profiler_t {
  uint64_t handle;
} epprof_profiler_t;

/* Timestamp encoding of the written trace. */
typedef enum epprof_timestamp_format {
  EPPROF_TIMESTAMPS_FRACTIONAL_US = 0, /* ts/dur in µs with ns digits (default) */
  EPPROF_TIMESTAMPS_INTEGER_US = 1     /* integer µs, as ONNX Runtime writes: both ends of a
                                        * slice to the nearest µs; a nonzero slice under 1 µs
                                        * is written 1 µs long with a "dur_ns" arg */
} epprof_timestamp_format;

/* File format of the written trace. */
typedef enum epprof_trace_format {
  EPPROF_TRACE_FORMAT_AUTO = 0,  /* by the path's extension: ".db", ".sqlite" or ".sqlite3"
                                  * is SQLite, anything else JSON (default) */
  EPPROF_TRACE_FORMAT_JSON = 1,  /* Chrome trace JSON, a superset of ONNX Runtime's profile */
  EPPROF_TRACE_FORMAT_SQLITE = 2 /* a SQLite database, times in ns (schema in README.md);
                                  * timestamp_format does not apply */
} epprof_trace_format;

/* The name of a category as filters spell it: "session", "node", "kernel",
 * "api", "memcpy", "counter", "memory" (the epprof_category names in lower
 * case). NULL for a value that is not a category. Static storage. */
EPPROF_API const char* epprof_category_name(epprof_category category);

/* What a profiler's trace leaves out: the vocabulary of a session's filters
 * (epprof/session.h), applied when the trace is written, to JSON and SQLite
 * traces alike. Filled by the caller: `size` = sizeof(epprof_trace_filter);
 * epprof reads only the fields that size covers (at least through
 * kernel_name_regex). Every pointer is borrowed until
 * epprof_profiler_create returns: epprof copies and interns what it keeps.
 * Filters combine with AND; a filter left zero (NULL, 0) passes everything,
 * and a filter with none set is no filter.
 *
 * What each event of the trace is judged by:
 *  - host events: `categories`. SESSION events (model loading, session
 *    initialization, model_run, executor phases) are always kept: they are
 *    the trace's timeline, which node events nest in and runs are found by.
 *  - NODE events: also op_types, node_names / node_name_regex and ep_names,
 *    read from the node the event declares (epprof_node_args_intern): its
 *    op type, name and provider. An event that declares none has only a
 *    name, its own. A NODE event that lacks what a filter tests fails it. Other host events have no node, and the node filters do not
 *    apply to them (unlike a session's filters, which a record lacking the
 *    field fails: a trace without its runs would not be a timeline).
 *  - plugin events (kernels, copies, API calls): `categories` by their own
 *    category, and kernel_name_regex on their name. One attributed to a
 *    host event (by correlation id) is kept only if that event is kept, so
 *    the work of a node left out goes with it rather than showing
 *    unattributed; one attributed to nothing is judged by those two alone.
 *    Flows go only between events that are kept.
 *  - counter tracks: the samples of a node's numeric annotations
 *    (epprof_event_annotate) go with their node event and need COUNTER in
 *    `categories`.
 *  - memory: the per-device memory tracks ("mem_in_use <device>",
 *    "mem_arena_held <device>") describe the whole device, so every node's allocations count in them
 *    whichever nodes are kept; with MEMORY not in `categories`, those tracks
 *    and the mem_* args of node events are left out. The mem_* args of a
 *    node left out go with it. The "memory" metadata is always whole.
 * What was left out is counted (epprof_trace_stats.filtered_events: host
 * and plugin events; counter samples are not events), and the trace's
 * metadata says it is partial: "filter" holds the filter and the count.
 * Sessions receive every device record of the scope, whatever this filter. */
typedef struct epprof_trace_filter {
  size_t size;
  /* Bit (1u << epprof_category) per category kept; 0: all. A bit past
   * EPPROF_CATEGORY_COUNT_ is INVALID_ARGUMENT. */
  uint32_t categories;
  uint32_t reserved;                 /* 0 */
  const char* const* op_types;       /* exact op types ("Conv"); NULL/0: any */
  size_t num_op_types;
  const char* const* node_names;     /* exact node names; NULL/0: any ... */
  size_t num_node_names;
  /* ... or a node name matching this ECMAScript regular expression (the
   * whole name). With both set, either match passes. */
  const char* node_name_regex;
  const char* const* ep_names;       /* exact EP names ("CPUExecutionProvider"); NULL/0: any */
  size_t num_ep_names;
  /* Plugin events whose name matches this ECMAScript regular expression
   * (the whole name); NULL: any. */
  const char* kernel_name_regex;
} epprof_trace_filter;

/* Filled by the caller. `size` must be set to sizeof(epprof_profiler_config);
 * epprof reads only the fields that size covers, so the struct can grow.
 * Zero fields take their defaults. */
typedef struct epprof_profiler_config {
  size_t size;
  /* Trace file to write at stop. Required. Checked at create: a directory
   * that cannot be written is an error then, not at the end. */
  const char* trace_path;
  /* A label for the scope, written in the metadata ("session", "run 3").
   * Default "profile". */
  const char* scope_name;
  /* Resident bytes of recorded host events before full chunks spill to
   * disk. Default 64 MiB; at least 1 MiB is used. */
  uint64_t memory_budget_bytes;
  /* Bytes that may be spilled to disk before events are dropped (and
   * counted). Default 16 GiB. */
  uint64_t disk_budget_bytes;
  /* Directory for spill files (unlinked at once, so none is left behind).
   * Default: the trace file's directory. */
  const char* spill_directory;
  /* An epprof_timestamp_format (JSON traces). */
  uint32_t timestamp_format;
  /* An epprof_trace_format. */
  uint32_t trace_format;
  /* What the trace leaves out (see epprof_trace_filter), borrowed until
   * create returns; NULL: nothing, the trace is whole. */
  const epprof_trace_filter* filter;
} epprof_profiler_config;

/* Counts of what a stopped profiler wrote. `size` as for the config. */
typedef struct epprof_trace_stats {
  size_t size;
  uint64_t host_events;                /* host events written */
  uint64_t device_events;              /* plugin events written */
  uint64_t dropped_events;             /* host events lost to the disk budget */
  uint64_t unattributed_device_events; /* plugin events whose id matched no host event */
  uint64_t spilled_bytes;              /* bytes written to spill files */
  uint64_t plugin_errors;              /* plugin slot calls that returned an error */
  uint64_t filtered_events;            /* host and plugin events the config's filter left out */
} epprof_trace_stats;

/* Creates a profiler (not yet started). Returns INVALID_ARGUMENT for a NULL
 * or too-small config, a missing trace path, an unknown timestamp or trace
 * format, or a bad filter (the message names the field): filter->size too
 * small, a categories bit that is no category, a NULL list with a nonzero
 * count or a NULL entry, an invalid regular expression (the expression and
 * the reason); IO_ERROR when the trace's directory cannot be written;
 * RESOURCE_EXHAUSTED when 256 profilers exist or a filter's names find the
 * string table full. Thread-safe. */
EPPROF_API epprof_status* epprof_profiler_create(const epprof_profiler_config* config,
                                                 epprof_profiler_t* out);

/* Gives the profiler its own EP profiler instance from `plugin`. Call before
 * start. Returns NOT_FOUND for a stale handle, FAILED_PRECONDITION once
 * started, PLUGIN_ERROR when the plugin cannot create a profiler or returns
 * one that lacks a required slot or was built for a newer ABI. */
EPPROF_API epprof_status* epprof_profiler_add_plugin(epprof_profiler_t profiler,
                                                     epprof_plugin_t plugin);

/* Records `value` (copied) under `key` in the trace metadata. NOT_FOUND,
 * INVALID_ARGUMENT for NULL strings. Thread-safe. */
EPPROF_API epprof_status* epprof_profiler_set_metadata(epprof_profiler_t profiler, const char* key,
                                                       const char* value);

/* Starts recording: T0 is now; each EP profiler gets start_profiling.
 * FAILED_PRECONDITION if already started or stopped; NOT_FOUND. */
EPPROF_API epprof_status* epprof_profiler_start(epprof_profiler_t profiler);

/* Stops recording, collects every EP profiler's events, attributes them,
 * merges and writes the trace (to a temporary file renamed into place, so a
 * failure never leaves a partial trace). A JSON trace past 1 MiB is written
 * by a helper thread, signals blocked, while the calling thread formats the
 * rest (not where the process may use only one CPU); the thread has ended
 * when the call returns. Every event must have ended and no
 * thread may be recording into this profiler. `stats` may be NULL. Returns
 * NOT_FOUND, FAILED_PRECONDITION if not running or while an event block is
 * open (nothing changes then), IO_ERROR if the trace cannot be written.
 * Plugin errors do not fail the stop: they are logged once per slot kind
 * and recorded in the trace. */
EPPROF_API epprof_status* epprof_profiler_stop(epprof_profiler_t profiler,
                                               epprof_trace_stats* stats);

/* Destroys the profiler (stopping it first, without writing, if running)
 * and releases its EP profiler instances. The handle becomes stale.
 * NOT_FOUND for a stale handle; FAILED_PRECONDITION, destroying nothing,
 * while an event block of it is open. */
EPPROF_API epprof_status* epprof_profiler_destroy(epprof_profiler_t profiler);

/* ---- Hot path. Called on the thread that runs the event. ---- */

/* Nonzero when `profiler` is not the disabled (zero) handle. A host that
 * guards its event calls with this pays a register compare, not a call,
 * when profiling is off. (It says nothing about whether the profiler is
 * running: the event calls report that.) */
static inline int epprof_profiler_enabled(epprof_profiler_t profiler) {
  return profiler.handle != 0;
}

/* Begins a host event on the calling thread and calls start_event on each
 * EP profiler. `correlation_id` comes from epprof_correlation_id_next(); a
 * host that reports one event to two profilers (session and run) passes the
 * same id to both. No lock, allocation or syscall. Returns NULL (also for
 * the zero handle); INVALID_ARGUMENT for an unknown category, name id 0 or
 * correlation id 0; NOT_FOUND for a stale handle; FAILED_PRECONDITION when
 * the profiler is not running; RESOURCE_EXHAUSTED past 256 nested events. */
EPPROF_API epprof_status* epprof_event_begin(epprof_profiler_t profiler, epprof_category category,
                                             epprof_name_id name, uint64_t correlation_id);

/* Ends the innermost open event of the calling thread, which must be
 * `correlation_id`, attaches `args` (copied; NULL when num_args is 0; at
 * most 32, also once arg sets are expanded), and calls stop_event on each
 * EP profiler (which sees a set's args in its place). The cheapest form
 * for many args is one EPPROF_ARG_SET arg. Returns NULL; INVALID_ARGUMENT
 * if the id is not the innermost open event (nothing changes), for bad
 * args (an unknown set id, a set with a nonzero key) or more than 32;
 * NOT_FOUND; FAILED_PRECONDITION. */
EPPROF_API epprof_status* epprof_event_end(epprof_profiler_t profiler, uint64_t correlation_id,
                                           const epprof_arg* args, size_t num_args);

/* Records a complete host event measured by the host: `start_ns` on the
 * host clock (epprof_clock_now_ns), `dur_ns` >= 0. EP profilers are not
 * called. Same statuses as begin + end. */
EPPROF_API epprof_status* epprof_event_record(epprof_profiler_t profiler, epprof_category category,
                                              epprof_name_id name, uint64_t correlation_id,
                                              int64_t start_ns, int64_t dur_ns,
                                              const epprof_arg* args, size_t num_args);

/* ---- Memory: allocations and frees ---- */

/* What an allocation holds, for the memory report. Append-only. */
typedef enum epprof_memory_tag {
  EPPROF_MEMORY_OTHER = 0,
  EPPROF_MEMORY_OUTPUT = 1,       /* a node's output (an activation) */
  EPPROF_MEMORY_TEMPORARY = 2,    /* scratch a kernel frees before it returns (im2col, ...) */
  EPPROF_MEMORY_INITIALIZER = 3,  /* a weight, allocated when the model loads */
  EPPROF_MEMORY_INPUT = 4,        /* a graph input the host provides */
  EPPROF_MEMORY_ARENA_CHUNK = 5,  /* memory an arena holds from the system; the tensors
                                   * inside it are reported on their own, so a chunk
                                   * counts as held (mem_arena_held), not as in use */
  EPPROF_MEMORY_TAG_COUNT_ = 6    /* number of tags in this ABI version; not a tag */
} epprof_memory_tag;

/* Records that `bytes` (> 0) were allocated on `device` (an interned name:
 * "cpu", "opencl:0", ...) as allocation `allocation_id` (the host's, e.g.
 * the address; unique among the live allocations of that device), at the
 * current time on the calling thread. It is attributed to the innermost
 * open event of this thread (the node that allocated), and becomes part of
 * that event's mem_* args, of the device's memory-in-use counter track and
 * of the memory report (epprof report --by memory). Same cost class as an
 * event: no lock, allocation or syscall. Returns NULL (also for the zero
 * handle); INVALID_ARGUMENT for bytes 0, an unknown tag or a device that is
 * not an interned name; NOT_FOUND for a stale handle; FAILED_PRECONDITION
 * when the profiler is not running. An allocation made while the profiler
 * was not running and freed while it is counts as freed memory of unknown
 * size (0): report allocations from profiler_start on. */
EPPROF_API epprof_status* epprof_memory_alloc(epprof_profiler_t profiler, uint64_t allocation_id, uint64_t bytes,
                                              epprof_name_id device, epprof_memory_tag tag);

/* Records that allocation `allocation_id` of `device` was freed, on the
 * calling thread, attributed like an allocation. Statuses as for
 * epprof_memory_alloc (no check on bytes or tag). A free of an id the scope
 * never saw allocated is kept and counted (metadata memory.unmatched_frees). */
EPPROF_API epprof_status* epprof_memory_free(epprof_profiler_t profiler, uint64_t allocation_id,
                                             epprof_name_id device);

/* ---- Event blocks: events known in advance, recorded by index ---- */

/* What one event of a block is. */
typedef struct epprof_event_desc {
  epprof_name_id name;    /* interned */
  epprof_arg_set_id args; /* the event's args as one arg set; 0: none */
} epprof_event_desc;

/* An event block. The host allocates it, zero-initialised before its first
 * open (epprof_event_block b = {0}), and libepprof fills it at open; its
 * fields are libepprof's. Begin and end read its first 48 bytes: a host
 * keeps those in a cache line its hot path reads anyway. */
typedef struct epprof_event_block {
  uint64_t opaque[8];
} epprof_event_block;

/* Opens `block` on the calling thread's track of `profiler`: `num_descs`
 * events, the i-th with correlation id first_correlation_id + i (a block
 * from epprof_correlation_id_block), category `category`, and the name and
 * args of descs[i]. For a host that records the same events again and
 * again, a runtime's node executions in a run: what an event is was checked
 * here, once, so recording it by index (epprof_event_block_begin / _end)
 * looks nothing up and touches only the block, the thread's buffer and
 * descs[i]. `descs` is borrowed: it must stay unchanged until the block is
 * closed. The block is used on the calling thread only; the thread may
 * record other events of the profiler meanwhile, and open other blocks.
 * On the zero (disabled) handle it opens a disabled block, whose calls do
 * nothing and return NULL. Returns NULL; INVALID_ARGUMENT for NULL block
 * or descs, num_descs 0 or above 2^32 - 2, an unknown category,
 * first_correlation_id 0 or a block of ids that would pass 2^64, or,
 * naming the index, a desc whose name is not interned or whose args are
 * not an arg set; NOT_FOUND for a stale handle; FAILED_PRECONDITION when
 * the profiler is not running, or an EP profiler of it wants start_event /
 * stop_event (it must see each event as it happens: use
 * epprof_event_begin / _end). After an error the block is not open, but
 * for INVALID_ARGUMENT on a block that is open already, which stays open. */
EPPROF_API epprof_status* epprof_event_block_open(epprof_profiler_t profiler, epprof_category category,
                                                  uint64_t first_correlation_id, size_t num_descs,
                                                  const epprof_event_desc* descs, epprof_event_block* block);

/* Begins event `index` of an open block, on the thread that opened it. A
 * block's events do not overlap: each one begun is ended before the next
 * begins. No lock, allocation or syscall. Returns NULL; INVALID_ARGUMENT
 * (nothing changes) when `block` is not open, `index` is not below its
 * count, or another event of the block is begun and not ended. */
EPPROF_API epprof_status* epprof_event_block_begin(epprof_event_block* block, size_t index);

/* Ends event `index` of the block, which must be the one begun, and records
 * it with the name and args of its desc. No lock, allocation or syscall
 * (but for a new buffer chunk, as any event). Returns NULL; INVALID_ARGUMENT
 * (nothing changes) when `block` is not open or `index` is not the event
 * begun. */
EPPROF_API epprof_status* epprof_event_block_end(epprof_event_block* block, size_t index);

/* Ends event `index` as epprof_event_block_end does, but records it with
 * `args` (copied; rules of epprof_event_end) instead of its desc's: for an
 * execution that went wrong (a kernel that threw) and says so. Not for the
 * hot path. Returns NULL; INVALID_ARGUMENT as for epprof_event_block_end,
 * or for bad args (the event stays begun). */
EPPROF_API epprof_status* epprof_event_block_end_with_args(epprof_event_block* block, size_t index,
                                                           const epprof_arg* args, size_t num_args);

/* Closes the block. An event begun and not ended is not recorded. Every
 * block must be closed before its profiler is stopped or destroyed. Returns
 * NULL; INVALID_ARGUMENT when `block` is not open; FAILED_PRECONDITION
 * (the block is closed all the same) when an event was begun and not
 * ended, naming it. */
EPPROF_API epprof_status* epprof_event_block_close(epprof_event_block* block);

/* ---- Args known after the event: counter values in a profiler's trace ---- */

/* Attaches `args` (copied) to the host event of `profiler` whose
 * correlation id is `correlation_id`: at stop they are written as extra
 * args of that event, and each INT64 arg (and each STRING arg holding a
 * number) of a NODE event also as a counter ("ph":"C") track named by its
 * key, at the event's start. For counter values read around a dispatch.
 * Not for the hot path (takes a lock). NOT_FOUND for a stale profiler;
 * INVALID_ARGUMENT for correlation id 0, NULL args with num_args > 0, more
 * than 32 args, a key that is not interned, an unknown arg type or a NULL
 * string. */
EPPROF_API epprof_status* epprof_event_annotate(epprof_profiler_t profiler,
                                                uint64_t correlation_id,
                                                const epprof_arg* args, size_t num_args);

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_PROFILER_H */
