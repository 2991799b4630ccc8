/* epprof/epprof.h: umbrella header for hosts. Plugins need only
 * epprof/ep_profiler.h. */
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
