// What the runtime itself asks of the built-in CPU EP.
#pragma once

#include "epprof/rt/execution_provider.h"

namespace epprof::rt::detail {

// `p` is a CPU EP made by make_cpu_execution_provider().
bool is_cpu_execution_provider(const ExecutionProvider& p);

}  // namespace epprof::rt::detail
