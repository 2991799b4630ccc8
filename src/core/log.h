// Warnings from epprof go through one sink that the host may replace
// (epprof_set_log_callback); the default prints one line on stderr.
#pragma once

#include <string>

#include "epprof/status.h"

namespace epprof::core {

void log_warning(epprof_status_code code, const std::string& message) noexcept;

}  // namespace epprof::core
