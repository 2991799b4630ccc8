// The ActivitySource of the plugin: CUPTI's activity API, process-wide (as
// CUPTI is). init registers the buffer callbacks and the timestamp
// callback that makes every record timestamp a host-clock reading; the
// first attach enables CONCURRENT_KERNEL, MEMCPY, MEMSET and
// EXTERNAL_CORRELATION, the last detach disables them.
#pragma once
#include <memory>
#include <string>

#include "activity_source.h"
#include "epprof/ep_profiler.h"

namespace epprof::cuda {

// The process's CUPTI source. init is idempotent; it returns null with
// `error` naming the CUPTI call and its result when CUPTI cannot be set up.
// `host` must stay valid while the plugin is loaded (its clock is CUPTI's
// timestamp callback).
ActivitySource* cupti_source(const epprof_host_api* host, std::string* error);

// "CUPTI_ERROR_NOT_INITIALIZED" or the number.
std::string cupti_result_name(int result);

}  // namespace epprof::cuda
