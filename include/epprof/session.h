/* epprof/session.h: profiling sessions and the dispatch counting service,
 * for tools.
 *
 * A session is a collection scope a tool opens: it chooses what to collect
 * (filters), how records reach it (a bounded buffer drained by a library
 * thread into the tool's callback, and/or a trace file) and, for counters,
 * how passes are replayed. Several sessions may be active at once; each
 * record a host produces goes to every active session whose filters accept
 * it, into that session's own buffer.
 *
 * Tools create, start, stop, flush and destroy sessions here, and configure
 * the dispatch counting service on them. The records and dispatch
 * descriptions defined here are what hosts produce: the host's side (an
 * inference runtime producing records and answering dispatch queries) is
 * epprof/host.h; the reference runtime implements it in
 * epprof::rt::ProfilingObserver (ProfilingOptions::sessions).
 *
 * Handles (epprof_session_t) are plain values checked on every call: an
 * unknown or destroyed handle returns EPPROF_NOT_FOUND. All functions are
 * thread-safe unless stated otherwise.
 */
#ifndef EPPROF_SESSION_H
#define EPPROF_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "epprof/counters.h"
#include "epprof/event.h"
#include "epprof/profiler.h"
#include "epprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Records ---- */

/* What a record describes. Append-only. */
typedef enum epprof_record_kind {
  EPPROF_RECORD_HOST_EVENT = 0,   /* a host event: session phase, run, node execution */
  EPPROF_RECORD_DEVICE_EVENT = 1, /* device work (kernel, memcpy): a host may emit them,
                                     and every epprof_profiler emits those of its EP
                                     profilers, with the node attribution it resolved,
                                     when it stops (plugins hand device work over at
                                     end_profiling); the dispatch range does not apply */
  EPPROF_RECORD_COUNTER = 2       /* one counter's value over one dispatch */
} epprof_record_kind;

/* node_index of a record that belongs to no graph node. */
#define EPPROF_RECORD_NO_NODE UINT32_C(0xFFFFFFFF)

/* One record: no pointers (names are interned ids, resolved with
 * epprof_name()), so a batch is one contiguous array. Fields a record kind
 * does not use are 0 (node_index: NO_NODE).
 *
 * Growable. `size` is the sizeof(epprof_record) its writer was built with,
 * and an array of records has that stride. A host sets it on every record
 * it emits; epprof reads only the fields it covers (fields added later
 * count as 0). A tool receives records with the stride it asked for
 * (epprof_session_config.record_size), and each record's `size` says how
 * many of its bytes epprof filled: fields past it are 0. */
typedef struct epprof_record {
  uint32_t size;              /* sizeof(epprof_record) of the writer; at least EPPROF_RECORD_MIN_SIZE */
  uint32_t kind;              /* an epprof_record_kind */
  uint32_t category;          /* an epprof_category (COUNTER for counter records) */
  uint32_t node_index;        /* graph node index, or EPPROF_RECORD_NO_NODE */
  uint64_t correlation_id;    /* the host event / dispatch it belongs to; 0 if none */
  int64_t ts_ns;              /* start, host clock (epprof_clock_now_ns) */
  int64_t dur_ns;             /* duration; for COUNTER the dispatch's first execution */
  epprof_name_id name;        /* event name; for COUNTER the counter's name */
  epprof_name_id node;        /* graph node name, or 0 */
  epprof_name_id op_type;     /* node op type ("Conv"), or 0 */
  epprof_name_id ep;          /* execution provider ("CPUExecutionProvider"), or 0 */
  epprof_name_id kernel;      /* kernel name, or 0 */
  uint32_t tid;               /* thread that produced it */
  uint64_t run_id;            /* the host's run ordinal (1, 2, ...), or 0 */
  uint32_t counter_flags;     /* COUNTER: EPPROF_COUNTER_VALUE_* bits (counters.h) */
  uint32_t reserved;          /* 0 */
  double value;               /* COUNTER: the value (exact for integers below 2^53) */
  uint64_t time_enabled_ns;   /* COUNTER: time the counter was enabled */
  uint64_t time_running_ns;   /* COUNTER: time it counted (< enabled when multiplexed) */
} epprof_record;

/* The size of the first growable layout (the one above, 104 bytes): the
 * least a record's `size` or a session's record_size may be. (Before it,
 * epprof 0.1's records were 96 bytes with no size field: a tool or host
 * built against that header must be rebuilt, and libepprof's soname moved
 * from .so.0 to .so.1 so that such a binary does not load this library.) */
#define EPPROF_RECORD_MIN_SIZE 104u

/* ---- Sessions ---- */

typedef struct epprof_session_t {
  uint64_t handle;
} epprof_session_t;

/* How counters that need more than one pass are collected. Append-only. */
typedef enum epprof_replay_mode {
  EPPROF_REPLAY_NONE = 0,        /* one execution; the backend multiplexes every pass and
                                    values are scaled estimates with enabled/running times */
  EPPROF_REPLAY_KERNEL = 1,      /* the host re-runs each dispatch's kernel once per extra
                                    pass on the same inputs; only the first run is timed */
  EPPROF_REPLAY_APPLICATION = 2, /* the tool runs the whole workload once per pass, each
                                    inside epprof_session_begin_pass/end_pass */
  EPPROF_REPLAY_USER = 3         /* passes over ranges the tool opens and closes with
                                    epprof_session_begin_pass/end_pass */
} epprof_replay_mode;

/* What happens when a producer finds the buffer full. */
typedef enum epprof_buffer_policy {
  EPPROF_BUFFER_LOSSLESS = 0, /* the producer waits for space: nothing is lost */
  EPPROF_BUFFER_DISCARD = 1   /* the record is dropped and counted exactly; the producer
                                 never waits */
} epprof_buffer_policy;

/* Receives records on the session's delivery thread (a library thread, one
 * per session): `records[0..num_records)` are borrowed until return, in the
 * order they were accepted per producer thread; `dropped` is the number of
 * records the DISCARD policy dropped since the previous call. Called when
 * the buffer reaches its watermark, on flush, and on stop (possibly with
 * num_records == 0 to report drops). It may block (LOSSLESS producers then wait)
 * and may call epprof functions, except flush, stop and destroy of its own
 * session (they return FAILED_PRECONDITION there). A returned status is
 * logged and counted in callback_errors, then released by epprof; a C++
 * exception thrown from it is caught, logged and counted the same way. */
typedef epprof_status* (*epprof_session_callback_fn)(void* user_data, epprof_session_t session,
                                                     const epprof_record* records, size_t num_records,
                                                     uint64_t dropped);

/* What a host knows about a dispatch, passed to the dispatch callback.
 * Strings are borrowed for the duration of the call. */
typedef struct epprof_dispatch_info {
  size_t size;               /* sizeof(epprof_dispatch_info) of the caller */
  uint64_t correlation_id;   /* the dispatch's node event id */
  uint32_t node_index;       /* or EPPROF_RECORD_NO_NODE */
  uint32_t reserved;         /* 0 */
  const char* node_name;     /* never NULL ("" when unknown) */
  const char* op_type;       /* never NULL */
  const char* ep_name;       /* never NULL */
  const char* kernel_name;   /* never NULL */
  const char* device;        /* counter device that runs it ("cpu"), never NULL */
  uint64_t queue;            /* queue/stream id; for CPU work the thread id */
  uint64_t run_id;           /* the host's run ordinal, or 0 */
  epprof_name_id node_name_id, op_type_id, ep_name_id, kernel_name_id; /* interned, or 0 */
} epprof_dispatch_info;

/* Called on the dispatching thread before each dispatch the session's
 * filters accept (and that falls in its dispatch range). Set *config to the
 * counters to collect for this dispatch, or leave it {0} for none. The
 * configuration must stay alive until the dispatch's records are delivered.
 * Must not block for long (it delays the dispatch); must not call session
 * control functions of its own session. A returned status or a C++
 * exception is logged, counted, and the dispatch is not counted. */
typedef epprof_status* (*epprof_dispatch_callback_fn)(void* user_data, epprof_session_t session,
                                                      const epprof_dispatch_info* info,
                                                      epprof_counter_config_t* config);

/* Receives one dispatch's counter values (COUNTER records, one per counter
 * the session's filters accept, replayed passes merged) on the dispatching
 * thread right after the dispatch completed. Borrowed until return. May
 * block (it delays the host). Errors and exceptions: as for the dispatch
 * callback. When no record callback is set, counter records go through the
 * session's buffer to its callback instead. */
typedef epprof_status* (*epprof_counter_record_fn)(void* user_data, epprof_session_t session,
                                                   const epprof_dispatch_info* info,
                                                   const epprof_record* records, size_t num_records);

/* Filled by the caller: `size` = sizeof(epprof_session_config); epprof reads
 * only the fields that size covers. Zero fields take their defaults. Every
 * pointer is borrowed until epprof_session_create returns (epprof copies
 * and interns what it keeps). Filters combine with AND: a record must pass
 * every filter that is set. A record that lacks the field a filter tests
 * (a run event has no op type) fails that filter. */
typedef struct epprof_session_config {
  size_t size;
  uint32_t replay_mode;   /* an epprof_replay_mode; default NONE */
  uint32_t buffer_policy; /* an epprof_buffer_policy; default LOSSLESS */
  /* Buffer capacity; default 4 MiB; rounded down to a power of two of
   * records, at least 64 records. */
  uint64_t buffer_bytes;
  /* Fill in bytes at which the callback is invoked; default half the
   * capacity; at most the capacity. */
  uint64_t watermark_bytes;
  epprof_session_callback_fn callback; /* may be NULL when trace_path is set */
  void* callback_user_data;
  /* Also write the accepted records as a trace here, when the session is
   * destroyed: through the same way out as epprof_profiler's traces, a
   * Chrome trace, or a SQLite database when the path ends in .db, .sqlite
   * or .sqlite3 (as EPPROF_TRACE_FORMAT_AUTO). Host records are slices of
   * their thread; device records (KERNEL, MEMCPY) go on a track per EP,
   * attributed by correlation id to the NODE record that names the same id
   * and its node, with a flow from it; COUNTER records become args of the
   * host event with their id, and counter tracks. The directory is checked
   * at create. NULL: no trace. */
  const char* trace_path;

  /* -- filters -- */
  uint32_t categories; /* bit (1u << epprof_category) per accepted category; 0: all */
  uint32_t record_kinds; /* bit (1u << epprof_record_kind) per accepted kind; 0: all */
  const char* const* op_types; /* exact op types; NULL/0: any */
  size_t num_op_types;
  const char* const* node_names; /* exact node names; NULL/0: any ... */
  size_t num_node_names;
  /* ... or a node name matching this ECMAScript regular expression (whole
   * name). With both set, either match passes. Invalid: INVALID_ARGUMENT. */
  const char* node_name_regex;
  const char* const* ep_names; /* exact EP names; NULL/0: any */
  size_t num_ep_names;
  const char* kernel_name_regex; /* ECMAScript, whole name; NULL: any */
  const char* const* counter_names; /* COUNTER records of these counters only; NULL/0: any */
  size_t num_counter_names;
  /* Dispatch range: the session numbers the dispatches (NODE host events)
   * its other filters accept, in the order they complete; it skips the
   * first `dispatch_skip`, then collects `dispatch_count` (0: no limit).
   * Records of a skipped dispatch (same correlation id, same emit batch),
   * and its counter collection, are left out too. */
  uint64_t dispatch_skip;
  uint64_t dispatch_count;

  /* -- dispatch counting service (optional) -- */
  epprof_dispatch_callback_fn dispatch_callback; /* NULL: no counting */
  void* dispatch_user_data;
  epprof_counter_record_fn counter_record_callback; /* NULL: counters go to the buffer */
  void* counter_record_user_data;

  /* -- records -- */
  /* sizeof(epprof_record) as the tool was built: the callbacks receive
   * records with this stride (see epprof_record). Required: a config whose
   * size does not reach this field comes from epprof 0.1's header, whose
   * records had another layout, and is refused. At least
   * EPPROF_RECORD_MIN_SIZE. */
  size_t record_size;
} epprof_session_config;

/* A session's life: CREATED → ACTIVE ⇄ STOPPED → (destroyed). */
typedef enum epprof_session_state {
  EPPROF_SESSION_CREATED = 0,
  EPPROF_SESSION_ACTIVE = 1,
  EPPROF_SESSION_STOPPED = 2
} epprof_session_state;

/* Counts since create. `size` = sizeof(epprof_session_stats); epprof
 * fills what size covers. */
typedef struct epprof_session_stats {
  size_t size;
  uint64_t records_delivered; /* handed to the callback (and to the trace) */
  uint64_t records_dropped;   /* DISCARD: buffer full; every one is reported to the callback */
  uint64_t records_filtered;  /* offered while active, rejected by the filters */
  uint64_t bytes_delivered;   /* records_delivered * the session's record_size */
  uint64_t records_buffered;  /* accepted, not yet delivered */
  uint64_t callback_calls;    /* invocations of the session callback */
  uint64_t callback_errors;   /* statuses returned and exceptions thrown by any callback */
  uint64_t producer_waits;    /* LOSSLESS: times a producer waited for space */
  uint64_t dispatches_counted; /* dispatches whose counter values were delivered */
  uint64_t counter_records;   /* COUNTER records delivered to counter_record_callback */
} epprof_session_stats;

/* Creates a session (CREATED: collects nothing yet) and its delivery
 * thread. Returns:
 *   INVALID_ARGUMENT  NULL config or out; config->size too small (a
 *                     config without record_size: epprof 0.1's header);
 *                     record_size below EPPROF_RECORD_MIN_SIZE; unknown
 *                     replay mode or buffer policy; neither callback nor
 *                     trace_path; watermark above the capacity; a NULL entry
 *                     in a name list (named), an invalid regular expression
 *                     (the message names which filter, the expression and
 *                     the reason); counter_record_callback without
 *                     dispatch_callback;
 *   IO_ERROR          trace_path's directory cannot be written;
 *   RESOURCE_EXHAUSTED 64 sessions exist; OUT_OF_MEMORY. */
EPPROF_API epprof_status* epprof_session_create(const epprof_session_config* config,
                                                epprof_session_t* out);

/* Starts collecting (CREATED or STOPPED → ACTIVE): records produced from
 * now on are offered to the filters. Starting after a warm-up collects only
 * what follows. NOT_FOUND; FAILED_PRECONDITION if already active. */
EPPROF_API epprof_status* epprof_session_start(epprof_session_t session);

/* Stops collecting (ACTIVE → STOPPED): waits for producers inside an emit
 * to this session to leave it, then delivers every buffered record (like
 * flush). NOT_FOUND; FAILED_PRECONDITION if not active, or when called from
 * the session's own callback. */
EPPROF_API epprof_status* epprof_session_stop(epprof_session_t session);

/* Delivers every record accepted before the call to the callback and
 * returns once it has been called. Any state. NOT_FOUND;
 * FAILED_PRECONDITION from the session's own callback. */
EPPROF_API epprof_status* epprof_session_flush(epprof_session_t session);

/* Stops (if active), flushes, joins the delivery thread, writes the trace
 * file if one was asked for (a JSON trace past 1 MiB with a writer thread,
 * as epprof_profiler_stop writes one; it has ended when this returns), and
 * frees the session; the handle becomes
 * stale even when an error is returned. NOT_FOUND; FAILED_PRECONDITION from
 * the session's own callback (nothing happens then); IO_ERROR when the
 * trace cannot be written. */
EPPROF_API epprof_status* epprof_session_destroy(epprof_session_t session);

/* The session's state. NOT_FOUND; INVALID_ARGUMENT for NULL out. */
EPPROF_API epprof_status* epprof_session_get_state(epprof_session_t session,
                                                   epprof_session_state* out);

/* The session's statistics. NOT_FOUND; INVALID_ARGUMENT for NULL stats or
 * a stats->size smaller than a size_t. */
EPPROF_API epprof_status* epprof_session_get_stats(epprof_session_t session,
                                                   epprof_session_stats* stats);

/* APPLICATION and USER replay: dispatches between begin_pass and end_pass
 * collect pass `pass` of the counter configuration their dispatch callback
 * returns (dispatches outside an open pass collect no counters). The tool
 * joins the passes (by node index and run ordinal for APPLICATION).
 * NOT_FOUND; FAILED_PRECONDITION for a session in KERNEL or NONE mode, or
 * when a pass is already open (begin) / none is open (end). */
EPPROF_API epprof_status* epprof_session_begin_pass(epprof_session_t session, uint32_t pass);
EPPROF_API epprof_status* epprof_session_end_pass(epprof_session_t session);

/* The host's side (producing records, answering dispatch queries) is in
 * epprof/host.h; epprof_event_annotate, which attaches counter values read
 * around a dispatch to the profiler's node event, in epprof/profiler.h. */

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_SESSION_H */
