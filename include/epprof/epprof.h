/* epprof/epprof.h: umbrella header for hosts. Plugins need only
 * epprof/ep_profiler.h.
 *
 * Naming rules that hold across the headers:
 * - Counts. A function (or host API slot) that reports how many of a thing
 *   there are is named for the thing and `_count`: epprof_counter_count,
 *   epprof_counter_config_pass_count, event_arg_count. An argument or field
 *   that gives the length of an array beside it is `num_` and the thing:
 *   num_args, num_op_types, num_records.
 * - Growable structs begin with a `size` field that the writer sets to the
 *   sizeof it was built with; a reader reads only what that size covers. */
#ifndef EPPROF_EPPROF_H
#define EPPROF_EPPROF_H

#include "epprof/event.h"
#include "epprof/status.h"
#include "epprof/ep_profiler.h"
#include "epprof/profiler.h"
#include "epprof/session.h"
#include "epprof/host.h"
#include "epprof/counters.h"
#include "epprof/capture.h"

#endif /* EPPROF_EPPROF_H */
