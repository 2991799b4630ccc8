/* epprof/counters.h: counters read around one dispatch.
 *
 * Three layers:
 *
 *  1. The registry. Each device ("cpu", later a GPU) has a backend that
 *     lists the counters it knows: software counters of the kernel
 *     (perf_event_open), hardware counters of the PMU (perf_event_open,
 *     PMU-native events named through libpfm4) and derived counters computed
 *     from values the host supplies (duration_ns, flops, bytes) and from other
 *     counters (flop_per_s, ipc). A counter the device names but cannot
 *     count here (a VM without a PMU) is listed with supported = 0 and the
 *     reason; it is never read as zeros.
 *
 *  2. Counter configurations. A configuration is a set of counter names for
 *     one device, validated and planned into passes at creation: a PMU with
 *     N programmable counters counts at most N events at once (fixed
 *     counters and software counters take no programmable slot). A set that
 *     needs more than one pass is still created, and creation returns
 *     EPPROF_MULTIPASS so the caller knows it must replay (kernel,
 *     application or user replay) or multiplex (no replay; scaled
 *     estimates).
 *
 *  3. Counting contexts. A context is a configuration opened on the calling
 *     thread: the perf_event groups (one group per pass, created disabled)
 *     count that thread only. Around each dispatch the owner calls
 *     start(pass), stop() and read(). start and stop each read the enabled
 *     group with ONE read() syscall (PERF_FORMAT_GROUP with the enabled and
 *     running times); read computes the deltas, the multiplexing scale and
 *     the derived counters and makes no syscall.
 *
 * Handles (epprof_counter_config_t, epprof_counting_context_t) are plain
 * values checked on every call: an unknown or destroyed handle returns
 * EPPROF_NOT_FOUND. Registry strings (names, descriptions, units, reasons)
 * have static storage: they stay valid for the life of the process.
 *
 * What is counted: work done by the thread that owns the context, in user
 * and kernel mode. Work that a dispatch hands to other threads (a thread
 * pool) is not counted; `duration_ns` is the owner's wall time.
 */
#ifndef EPPROF_COUNTERS_H
#define EPPROF_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "epprof/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The registry ---- */

/* Where a counter's values come from. Append-only. */
typedef enum epprof_counter_kind {
  EPPROF_COUNTER_SOFTWARE = 0, /* counted by the OS kernel (perf software events) */
  EPPROF_COUNTER_HARDWARE = 1, /* counted by the device's PMU */
  EPPROF_COUNTER_DERIVED = 2   /* computed: from host-supplied measures or other counters */
} epprof_counter_kind;

/* A description of one counter. The caller sets `size` to
 * sizeof(epprof_counter_info); epprof fills the fields that size covers.
 * Every string is non-NULL, has static storage, and is valid for the life
 * of the process. */
typedef struct epprof_counter_info {
  size_t size;
  const char* name;               /* "task-clock", "instructions", "flops" */
  const char* description;        /* one sentence */
  const char* unit;               /* "ns", "count", "flop", "byte", "flop/s", "instructions/cycle" */
  const char* backend;            /* "perf_event", "libpfm4", "host", "ratio", "fake-pmu" */
  const char* device;             /* the device it belongs to: "cpu" */
  const char* unsupported_reason; /* "" when supported; otherwise why not, e.g.
                                     "unsupported on this machine: no PMU (...)" */
  uint32_t kind;                  /* an epprof_counter_kind */
  uint32_t supported;             /* 1: can be counted here; 0: see unsupported_reason */
} epprof_counter_info;

/* The number of devices with a counter backend ("cpu" always; more once
 * registered). INVALID_ARGUMENT for NULL `out`. Thread-safe. */
EPPROF_API epprof_status* epprof_counter_device_count(size_t* out);

/* The name of device `index` (0 <= index < count), static storage.
 * INVALID_ARGUMENT for NULL `out` or an index out of range. Thread-safe. */
EPPROF_API epprof_status* epprof_counter_device_name(size_t index, const char** out);

/* The number of counters device `device` lists, supported or not.
 * INVALID_ARGUMENT for NULL arguments; NOT_FOUND for an unknown device (the
 * message lists the known ones). Thread-safe. */
EPPROF_API epprof_status* epprof_counter_count(const char* device, size_t* out);

/* Describes counter `index` of `device` (0 <= index < epprof_counter_count).
 * The order is stable within a process. INVALID_ARGUMENT for NULL
 * arguments, a too-small out->size or an index out of range; NOT_FOUND for
 * an unknown device. Thread-safe. */
EPPROF_API epprof_status* epprof_counter_get_info(const char* device, size_t index,
                                                  epprof_counter_info* out);

/* Describes the counter named `name` on `device`. Names are case-sensitive;
 * a PMU-native event name that libpfm4 can encode on this machine (e.g.
 * "INST_RETIRED:ANY_P") is found too. NOT_FOUND for an unknown device or
 * counter: the message names the closest known counter names.
 * INVALID_ARGUMENT for NULL arguments or a too-small out->size.
 * Thread-safe. */
EPPROF_API epprof_status* epprof_counter_find(const char* device, const char* name,
                                              epprof_counter_info* out);

/* Registers the device "fake-pmu": a simulated CPU PMU with 4 programmable
 * counters and 2 fixed ones (cycles, instructions), for testing pass
 * planning and replay where no PMU exists. Its hardware counters are
 * deterministic: each start/stop interval adds a fixed amount per event
 * (documented in `description`), so replayed passes give equal values. Its
 * contexts make no syscall. Software counters are not offered on it;
 * derived counters are. Idempotent; thread-safe. Returns NULL or
 * OUT_OF_MEMORY. */
EPPROF_API epprof_status* epprof_counter_register_fake_device(void);

/* ---- Counter configurations ---- */

typedef struct epprof_counter_config_t {
  uint64_t handle;
} epprof_counter_config_t;

/* Pass value asking a context to count every pass at once, letting the
 * backend multiplex (replay mode NONE): values are then scaled estimates
 * (raw * enabled / running), reported with both times. */
#define EPPROF_COUNTER_PASS_MULTIPLEX UINT32_C(0xFFFFFFFF)

/* Creates a configuration of the counters `names[0..num_names)` on
 * `device`, in that order, and plans them into passes. A ratio counter
 * (flop_per_s, ipc) brings its inputs in: they are appended after the
 * named counters when not named themselves, and always share its pass.
 * Host-supplied derived counters (duration_ns, flops, bytes) and the ratios
 * of them are produced in every pass; they are listed in pass 0.
 * Returns:
 *   NULL              created; one pass suffices; *out is set.
 *   MULTIPASS         created, *out is set and must be destroyed, but the
 *                     set needs more than one pass on this device (the
 *                     message gives the count); see
 *                     epprof_counter_config_pass_count.
 *   INVALID_ARGUMENT  NULL device or out, NULL names with num_names > 0,
 *                     num_names == 0, a NULL name, a name given twice, or an
 *                     unknown name: the message names it and the closest
 *                     known names ("unknown counter 'task-clk' on device
 *                     'cpu'; did you mean: task-clock, cpu-clock?").
 *   NOT_FOUND         unknown device (the message lists the known ones).
 *   UNSUPPORTED       a named counter exists but cannot be counted on this
 *                     machine; the message names it and gives the reason.
 *   RESOURCE_EXHAUSTED 1024 configurations exist; OUT_OF_MEMORY.
 * On every status but MULTIPASS, *out is left unchanged and nothing is
 * created. Thread-safe. */
EPPROF_API epprof_status* epprof_counter_config_create(const char* device,
                                                       const char* const* names,
                                                       size_t num_names,
                                                       epprof_counter_config_t* out);

/* Destroys the configuration; the handle becomes stale. Contexts created
 * from it keep working until destroyed. NOT_FOUND for a stale handle.
 * Thread-safe. */
EPPROF_API epprof_status* epprof_counter_config_destroy(epprof_counter_config_t config);

/* The number of counters in the configuration, inputs brought in by ratios
 * included: the length of the value array a context fills. NOT_FOUND,
 * INVALID_ARGUMENT for NULL `out`. Thread-safe. */
EPPROF_API epprof_status* epprof_counter_config_counter_count(epprof_counter_config_t config,
                                                                 size_t* out);

/* Describes counter `index` of the configuration and the pass that counts
 * it. `info` and `pass` may each be NULL. NOT_FOUND; INVALID_ARGUMENT for
 * an index out of range or a too-small info->size. Thread-safe. */
EPPROF_API epprof_status* epprof_counter_config_get_counter(epprof_counter_config_t config,
                                                            size_t index,
                                                            epprof_counter_info* info,
                                                            uint32_t* pass);

/* The number of passes the configuration needs (>= 1). NOT_FOUND,
 * INVALID_ARGUMENT for NULL `out`. Thread-safe. */
EPPROF_API epprof_status* epprof_counter_config_pass_count(epprof_counter_config_t config,
                                                               uint32_t* out);

/* Deprecated: the spellings of epprof_counter_config_counter_count and
 * epprof_counter_config_pass_count from before counts had one naming rule
 * (epprof/epprof.h). They behave exactly as those do, and stay exported so
 * that binaries built against 0.1 keep loading; new code uses the new
 * names. */
EPPROF_API epprof_status* epprof_counter_config_get_num_counters(epprof_counter_config_t config,
                                                                 size_t* out);
EPPROF_API epprof_status* epprof_counter_config_get_num_passes(epprof_counter_config_t config,
                                                               uint32_t* out);

/* The counters of pass `pass`: writes up to `capacity` counter indices
 * (into the configuration's order, ascending) to `indices` and the total
 * number in the pass to *count. `indices` may be NULL when capacity is 0,
 * to ask for the count. NOT_FOUND; INVALID_ARGUMENT for NULL `count`, NULL
 * indices with capacity > 0, or pass >= the number of passes.
 * Thread-safe. */
EPPROF_API epprof_status* epprof_counter_config_get_pass(epprof_counter_config_t config,
                                                         uint32_t pass, size_t* indices,
                                                         size_t capacity, size_t* count);

/* ---- Counting contexts: the per-dispatch hot path ---- */

typedef struct epprof_counting_context_t {
  uint64_t handle;
} epprof_counting_context_t;

/* What the host knows about a dispatch, for the derived counters. Filled by
 * the caller; `size` = sizeof(epprof_dispatch_measures); epprof reads only
 * what size covers. libepprof does not interpret the work itself: the host
 * computes flops and bytes (the reference runtime's cost model does). */
typedef struct epprof_dispatch_measures {
  size_t size;
  uint32_t known;       /* EPPROF_MEASURE_* bits: which fields below are set */
  uint32_t reserved;    /* 0 */
  uint64_t duration_ns; /* replaces the context's own start-to-stop wall time */
  double flops;         /* floating-point operations of the dispatch */
  double bytes;         /* bytes read and written by the dispatch */
} epprof_dispatch_measures;

#define EPPROF_MEASURE_DURATION 0x1u
#define EPPROF_MEASURE_FLOPS 0x2u
#define EPPROF_MEASURE_BYTES 0x4u

/* epprof_counter_value.flags bits. */
#define EPPROF_COUNTER_VALUE_VALID 0x1u       /* `value` holds a measurement */
#define EPPROF_COUNTER_VALUE_SCALED 0x2u      /* multiplexed: running < enabled, value scaled */
#define EPPROF_COUNTER_VALUE_NOT_IN_PASS 0x4u /* the counter belongs to another pass */
#define EPPROF_COUNTER_VALUE_NOT_RUNNING 0x8u /* enabled but never scheduled (running == 0) */
#define EPPROF_COUNTER_VALUE_NO_INPUT 0x10u   /* a derived counter lacks an input (a host
                                                 measure not given, an input not in this pass,
                                                 a zero denominator) */

/* One counter's value over one start/stop interval. When VALID is not set,
 * `value` and `raw` are 0 and another flag says why: a missing value is
 * never reported as a zero count. */
typedef struct epprof_counter_value {
  double value;             /* the estimate: raw * time_enabled / time_running when
                               multiplexed, raw otherwise; for derived counters the
                               computed value */
  uint64_t raw;             /* the counted delta (0 for derived counters) */
  uint64_t time_enabled_ns; /* how long the counter's group was enabled in the interval */
  uint64_t time_running_ns; /* how long it was actually counting (<= enabled) */
  uint32_t flags;           /* EPPROF_COUNTER_VALUE_* bits */
  uint32_t pass;            /* the pass the interval counted, or EPPROF_COUNTER_PASS_MULTIPLEX */
} epprof_counter_value;

/* Opens `config` on the calling thread, which becomes the context's owner:
 * every pass's group is created (disabled), counting the owner thread only.
 * start, stop and read must be called on the owner; destroy on any thread
 * once the owner no longer uses it. Not for the hot path (syscalls; create
 * one context per thread and reuse it for every dispatch).
 * Returns NOT_FOUND for a stale config; INVALID_ARGUMENT for NULL `out`;
 * UNSUPPORTED when the OS refuses a counter (the message names the counter
 * and the errno, and, for EACCES/EPERM, the value of
 * /proc/sys/kernel/perf_event_paranoid and the capability needed);
 * RESOURCE_EXHAUSTED when out of file descriptors or 4096 contexts exist;
 * OUT_OF_MEMORY. Thread-safe. */
EPPROF_API epprof_status* epprof_counting_context_create(epprof_counter_config_t config,
                                                         epprof_counting_context_t* out);

/* Destroys the context and closes its file descriptors; the handle becomes
 * stale. NOT_FOUND for a stale handle. Must not race with a call on the
 * owner thread. */
EPPROF_API epprof_status* epprof_counting_context_destroy(epprof_counting_context_t context);

/* Begins an interval: enables pass `pass`'s group if another pass was
 * enabled (a one-time ioctl on a pass change), then snapshots it with one
 * read(). `pass` is < the configuration's number of passes, or
 * EPPROF_COUNTER_PASS_MULTIPLEX to enable every group at once (one read per
 * group). Owner thread only; no allocation, no lock.
 * Returns NOT_FOUND for a stale handle; INVALID_ARGUMENT for a pass out of
 * range; FAILED_PRECONDITION when called off the owner thread or when an
 * interval is already open; IO_ERROR when the read fails (errno named). */
EPPROF_API epprof_status* epprof_counting_context_start(epprof_counting_context_t context,
                                                        uint32_t pass);

/* Ends the interval with one read() of the same group(s). Owner thread
 * only; no allocation, no lock. NOT_FOUND; FAILED_PRECONDITION off the
 * owner thread or with no open interval; IO_ERROR. */
EPPROF_API epprof_status* epprof_counting_context_stop(epprof_counting_context_t context);

/* The values of the last completed interval, one per counter of the
 * configuration, in its order, into values[0..num_values). `measures` (may
 * be NULL) supplies the host's values for the derived counters; without
 * EPPROF_MEASURE_DURATION, duration_ns is the owner's start-to-stop wall
 * time. Counters of other passes get NOT_IN_PASS. No syscall, no
 * allocation. Owner thread only. NOT_FOUND; INVALID_ARGUMENT for NULL
 * values, num_values < the number of counters, or a measures->size too
 * small for its `size` field; FAILED_PRECONDITION off the owner thread, or
 * when no interval has completed, or while one is open. */
EPPROF_API epprof_status* epprof_counting_context_read(epprof_counting_context_t context,
                                                       const epprof_dispatch_measures* measures,
                                                       epprof_counter_value* values,
                                                       size_t num_values);

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_COUNTERS_H */
