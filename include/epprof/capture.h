/* epprof/capture.h: on-demand capture of a running host.
 *
 * A host (an inference server) that cannot be restarted with profiling on
 * opens a listener once; a tool (`epprof capture PID`) later asks it,
 * through the listener, to profile the next N runs or S seconds of runs.
 * The listener only carries the request and the answer: the host itself
 * opens a profiler (epprof/profiler.h) at its next run boundary, records
 * the runs, stops it, and reports back. While no capture is asked for, no
 * profiler exists, so the host's events stay at the disabled-path cost;
 * the only cost is one epprof_listener_pending() per run boundary.
 *
 * Host loop, in outline:
 *
 *   epprof_listener_config c = {sizeof c};
 *   epprof_listener_start(&c, &l);
 *   for (;;) {                                    // one iteration per run
 *     if (!capturing && epprof_listener_pending(l)) {
 *       epprof_capture_request r = {sizeof r};
 *       epprof_listener_take(l, &r);              // then epprof_profiler_create with
 *       ...                                       // r.trace_path, start it
 *     }
 *     run();                                      // events go to the profiler, if any
 *     if (capturing && done) { stop the profiler; epprof_listener_complete(l, &result); }
 *   }
 *   epprof_listener_stop(l);
 *
 * Security. The listener is a Unix domain socket "epprof-<pid>.sock", mode
 * 0600, in a directory only the owner can enter: by default
 * $XDG_RUNTIME_DIR/epprof when XDG_RUNTIME_DIR is an absolute path to a
 * directory (not a symlink) owned by the process's effective uid, else
 * /tmp/epprof-<uid>. The directory is created with mode 0700; an existing
 * one must be a directory (not a symlink) owned by the effective uid with
 * no group or other access, or the listener does not start. Every peer's
 * credentials are read with SO_PEERCRED: a peer whose effective uid is not
 * the host's (root included) gets an error reply, is disconnected and is
 * logged through epprof_set_log_callback's sink.
 *
 * Protocol (for other clients; `epprof capture` speaks it). The client
 * sends one JSON object on one line (at most 65536 bytes, newline
 * included; a client may instead shut down its writing side), within the
 * config's request_timeout_ms of connecting:
 *   {"runs": N}                  or {"duration_ms": MS}       (exactly one)
 *   "output": "/abs/trace.json"  required, an absolute path; ".db",
 *                                ".sqlite", ".sqlite3" give a SQLite trace
 *   "scope_name": "..."          optional, at most 256 bytes
 *   "protocol": 1                optional; another value is refused
 *   "filter": {...}              optional: what the trace leaves out, as
 *                                epprof_trace_filter (epprof/profiler.h) says
 * with N in 1..1000000 and MS in 1..86400000; any other key, a wrong type,
 * a duplicate key or a NUL byte in a string is an error. The filter's keys,
 * each optional, AND-combined:
 *   "categories": ["node", ...]  names from epprof_category_name: session,
 *                                node, kernel, api, memcpy, counter, memory
 *   "op_types": ["Conv", ...]    "node_names": [...]    "ep_names": [...]
 *   "node_name_regex": "..."     "kernel_name_regex": "..."  (ECMAScript,
 *                                whole name)
 * A list holds 1..1024 non-empty strings, a string at most 1024 bytes; an
 * unknown key, a wrong type, a duplicate, an empty list or name, an unknown
 * category or a regular expression that does not compile is refused when
 * the request arrives (the error names the field, "filter.op_types[1]"),
 * before the host sees it. {} is no filter. The listener answers with one
 * JSON object per line, each with an "event" key:
 *   {"event":"accepted","id":ID,"pid":PID}   the request waits for the host
 *   {"event":"started","id":ID}              the host took it (run boundary)
 *   {"event":"done","id":ID,"trace":PATH,"runs":N,"host_events":N,
 *    "device_events":N,["filtered_events":N,]"latency_ns":NS,"summary":TEXT}
 *   {"event":"error","error":TEXT}           the last line, then it closes
 * "filtered_events" (a request with a filter, when the host reports it)
 * counts the host and device events the filter left out of the trace.
 * "latency_ns" is the time from the request's arrival to the start of the
 * first recorded run (-1 when the host did not say). A connection closed
 * without a "done" or "error" line means the process exited (or was
 * killed) before the capture completed: the host's profiler writes its
 * trace only at stop, through a temporary renamed into place, so no trace,
 * whole or partial, exists then.
 *
 * One capture at a time: a request that arrives while another is pending
 * or in progress is refused at once ("a capture of pid N is already in
 * progress"), never queued. A client that disconnects before the host took
 * its request cancels it; once taken, the capture runs to its end and its
 * answer is dropped.
 *
 * Handles (epprof_listener_t) are plain values checked on every call: an
 * unknown or stopped handle returns EPPROF_NOT_FOUND. All functions are
 * thread-safe. At most 8 listeners exist at once.
 */
#ifndef EPPROF_CAPTURE_H
#define EPPROF_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "epprof/profiler.h"
#include "epprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct epprof_listener_t {
  uint64_t handle;
} epprof_listener_t;

/* Filled by the caller. `size` must be set to sizeof(epprof_listener_config);
 * epprof reads only the fields that size covers. Zero fields take their
 * defaults. */
typedef struct epprof_listener_config {
  size_t size;
  /* Directory of the socket; NULL or "": the default (see above). Created
   * with mode 0700 if missing (its parent must exist), checked as above. */
  const char* socket_dir;
  /* How long a connected client has to send its whole request line before
   * it gets an error reply and is disconnected, so that a client that
   * connects and stalls holds nothing. Default 5000 ms. */
  uint32_t request_timeout_ms;
  uint32_t reserved; /* 0 */
} epprof_listener_config;

/* A capture request, as epprof_listener_take hands it to the host. The
 * caller sets `size` to sizeof(epprof_capture_request); epprof writes only
 * the fields that size covers. */
typedef struct epprof_capture_request {
  size_t size;
  uint64_t request_id;     /* pass it to epprof_listener_complete */
  uint64_t runs;           /* runs to profile, or 0 when duration_ns is set */
  int64_t duration_ns;     /* profile the runs that start within this time of the first
                              one (at least one run), or 0 when runs is set */
  const char* trace_path;  /* absolute path of the trace to write; borrowed until
                              epprof_listener_complete for this request or
                              epprof_listener_stop returns */
  const char* scope_name;  /* never NULL ("capture" by default); borrowed like trace_path */
  int64_t received_ns;     /* host clock (epprof_clock_now_ns) when the request arrived */
  uint32_t client_pid;     /* the client, from SO_PEERCRED */
  uint32_t client_uid;     /* always the host's effective uid */
  /* What the client wants the trace to leave out (the request's "filter"),
   * for the host to pass as epprof_profiler_config.filter; NULL when the
   * request has none. Its regular expressions were checked when the
   * request arrived. Borrowed like trace_path, and everything it points
   * to with it. */
  const epprof_trace_filter* filter;
} epprof_capture_request;

/* How a capture ended, as the host reports it. The caller sets `size` to
 * sizeof(epprof_capture_result); epprof reads only the fields that size
 * covers (at least through `message`). Strings are borrowed until return. */
typedef struct epprof_capture_result {
  size_t size;
  uint32_t code;             /* an epprof_status_code: EPPROF_OK when the trace was
                                written, else why not (sent to the client as an error) */
  uint32_t reserved;         /* 0 */
  const char* message;       /* the error when code is not EPPROF_OK; may be NULL */
  const char* trace_path;    /* the trace written; NULL: the request's path */
  uint64_t runs;             /* runs recorded */
  uint64_t host_events;      /* from epprof_trace_stats */
  uint64_t device_events;
  int64_t first_run_ns;      /* host clock when the first recorded run started; 0: unknown */
  const char* summary;       /* a short line for the client (may be NULL) */
  uint64_t filtered_events;  /* from epprof_trace_stats: what the request's filter left out */
} epprof_capture_result;

/* Creates the socket directory if needed, removes stale sockets in it (a
 * socket "epprof-<pid>.sock" whose process no longer exists and that
 * refuses connections: what a killed host leaves), binds this process's
 * socket and starts the listener's thread (signals blocked on it), then
 * stores the handle in *out. `config` is borrowed until return. Returns:
 *   INVALID_ARGUMENT   NULL config or out, config->size too small, a
 *                      relative socket_dir, or a socket path longer than a
 *                      Unix socket address holds;
 *   FAILED_PRECONDITION the directory is unsafe (a symlink, not a
 *                      directory, another owner, group or other access:
 *                      the message names it), or a listener of this
 *                      process already answers at the socket path, or a
 *                      file that is not a socket is there;
 *   IO_ERROR           the directory or socket cannot be created or bound
 *                      (the message carries the system's reason);
 *   RESOURCE_EXHAUSTED 8 listeners exist;
 *   OUT_OF_MEMORY.
 * On error nothing is left behind (a directory created stays). */
EPPROF_API epprof_status* epprof_listener_start(const epprof_listener_config* config, epprof_listener_t* out);

/* The socket's path in *out, borrowed until epprof_listener_stop. Returns
 * INVALID_ARGUMENT for NULL out, NOT_FOUND for a stale handle. */
EPPROF_API epprof_status* epprof_listener_get_socket_path(epprof_listener_t listener, const char** out);

/* Nonzero when a capture request waits to be taken. For the host's run
 * boundary: a handle check and one relaxed atomic load; no lock, syscall
 * or allocation. 0 for a stale handle. Any thread. */
EPPROF_API uint32_t epprof_listener_pending(epprof_listener_t listener);

/* Takes the pending request: fills *out (see epprof_capture_request) and
 * tells the client that the capture started. From now on the capture is
 * the host's, until epprof_listener_complete. Returns:
 *   INVALID_ARGUMENT    NULL out or out->size too small;
 *   NOT_FOUND           a stale handle;
 *   FAILED_PRECONDITION no request is pending (none came, another thread
 *                       took it, or its client went away); *out unchanged. */
EPPROF_API epprof_status* epprof_listener_take(epprof_listener_t listener, epprof_capture_request* out);

/* Reports how the capture of request `request_id` ended; the listener
 * sends it to the client and is ready for the next request. A host that
 * cannot capture after all (the trace path cannot be written, a run
 * failed) reports that with a code other than EPPROF_OK. Returns:
 *   INVALID_ARGUMENT    NULL result, result->size too small, or a code
 *                       that is not an epprof_status_code;
 *   NOT_FOUND           a stale handle;
 *   FAILED_PRECONDITION `request_id` is not the capture in progress. */
EPPROF_API epprof_status* epprof_listener_complete(epprof_listener_t listener, uint64_t request_id,
                                                   const epprof_capture_result* result);

/* Stops the listener: a client waiting on a capture gets an error ("the
 * listener stopped before the capture completed; no trace was written"),
 * the thread is joined, the socket is closed and its file removed. The
 * handle becomes stale; strings borrowed from the listener are released.
 * A profiler the host opened for a capture is the host's to stop or
 * destroy. Returns NOT_FOUND for a stale handle. Blocks briefly (the
 * thread's join); not from a log callback. */
EPPROF_API epprof_status* epprof_listener_stop(epprof_listener_t listener);

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_CAPTURE_H */
