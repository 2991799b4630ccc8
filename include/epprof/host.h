/* epprof/host.h: the host's side of sessions and of the dispatch counting
 * service (epprof/session.h is the tool's side).
 *
 * A host (an inference runtime) produces records for the active sessions
 * (epprof_session_emit), and before each dispatch asks them which counters
 * to collect (epprof_session_query_dispatch), then delivers the values
 * (epprof_session_deliver_counters). The counter values read around a
 * dispatch also go on the profiler's node event through
 * epprof_event_annotate (epprof/profiler.h). The reference runtime does all
 * of this in epprof::rt::ProfilingObserver (ProfilingOptions::sessions).
 *
 * All functions are thread-safe unless stated otherwise.
 */
#ifndef EPPROF_HOST_H
#define EPPROF_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "epprof/session.h"
#include "epprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Producing records ---- */

/* Nonzero while some session is active: a host tests it before building
 * records. Lock-free, any thread. */
EPPROF_API int epprof_session_any_active(void);

/* The number of active sessions, for a host that cannot afford the call of
 * epprof_session_any_active before every dispatch: it reads this word with
 * a relaxed atomic load of its own (C11 atomic_load_explicit through an
 * _Atomic uint32_t view, C++20 std::atomic_ref, or the compiler's atomic
 * built-ins), so that with no session active its cost is that one load.
 * Static storage, valid for the life of the process. */
EPPROF_API const uint32_t* epprof_session_active_word(void);

/* Offers `records[0..num_records)` (copied) to every active session; each
 * keeps those its filters accept. The array's stride is records[0].size
 * (set it to sizeof(epprof_record) on every record); every record must
 * carry the same size. A batch should hold one dispatch's records (its
 * NODE event first), so that the dispatch range keeps or drops them
 * together. With LOSSLESS sessions the call may wait for buffer space.
 * No allocation when the records' size is this header's sizeof (a host
 * built against a later header has its records converted, in a copy).
 * Returns NULL; INVALID_ARGUMENT for NULL records with
 * num_records > 0, a size below EPPROF_RECORD_MIN_SIZE or unlike the
 * first record's, or an unknown kind (nothing is offered then; the message
 * names the record). With no session active it returns NULL at once,
 * checking nothing. */
EPPROF_API epprof_status* epprof_session_emit(const epprof_record* records, size_t num_records);

/* ---- The dispatch counting service ---- */

/* One active session's answer to a dispatch query. */
typedef struct epprof_dispatch_request {
  epprof_session_t session;
  epprof_counter_config_t config; /* never {0} in a returned request */
  uint32_t replay_mode;           /* the session's epprof_replay_mode */
  uint32_t pass;                  /* APPLICATION/USER: the open pass; otherwise 0 */
} epprof_dispatch_request;

/* Before a dispatch: calls the dispatch callback of every active session
 * that has one and whose filters and dispatch range accept the dispatch,
 * and writes up to `capacity` requests (sessions that asked for counters)
 * to `out`; *count receives the number written. APPLICATION/USER sessions
 * with no open pass are not asked. Call on the dispatching thread.
 * INVALID_ARGUMENT for NULL info or count, NULL out with capacity > 0, or
 * info->size too small. */
EPPROF_API epprof_status* epprof_session_query_dispatch(const epprof_dispatch_info* info,
                                                        epprof_dispatch_request* out,
                                                        size_t capacity, size_t* count);

/* After the dispatch: hands the COUNTER records of `session`'s request
 * (filtered by its counter names) to its counter_record_callback, or to its
 * buffer when it has none. NOT_FOUND for a stale session (e.g. destroyed
 * during the dispatch); INVALID_ARGUMENT for NULL info, NULL records
 * with num_records > 0, or record sizes as for epprof_session_emit. */
EPPROF_API epprof_status* epprof_session_deliver_counters(epprof_session_t session,
                                                          const epprof_dispatch_info* info,
                                                          const epprof_record* records,
                                                          size_t num_records);

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_HOST_H */
