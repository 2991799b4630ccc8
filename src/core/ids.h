// Process-unique correlation ids. Each thread reserves a block of ids with
// one atomic add and hands them out locally, so the hot path has no shared
// write; ids are never reused and never 0.
#pragma once

#include <cstdint>

namespace epprof::core {

uint64_t next_correlation_id() noexcept;

// The first of `count` consecutive ids no other call hands out; 0 when
// count is 0 or the id space would overflow.
uint64_t reserve_correlation_ids(uint64_t count) noexcept;

}  // namespace epprof::core
