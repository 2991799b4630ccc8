// Process-unique correlation ids. Each thread reserves a block of ids with
// one atomic add and hands them out locally, so the hot path has no shared
// write; ids are never reused and never 0.
#pragma once

#include <cstdint>

namespace epprof::core {

uint64_t next_correlation_id() noexcept;

}  // namespace epprof::core
