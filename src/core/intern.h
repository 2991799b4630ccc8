// Process-wide string interning. Names are interned once, off the hot path;
// records carry the 32-bit id. Lookup by id is lock-free.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace epprof::core {

constexpr uint32_t kMaxInterned = 1u << 22;

// Returns the id of `s` (interning it if new), or 0 when the table is full.
// Throws std::bad_alloc on allocation failure.
uint32_t intern(std::string_view s);

// The interned string, or nullptr for an unknown id.
const std::string* interned(uint32_t id) noexcept;

// Whether `id` was returned by intern(): the same answer as interned(id) !=
// nullptr for ids intern() handed out, reading one word, not the table (ids
// are dense). For validating on the hot path.
bool is_interned(uint32_t id) noexcept;

// How many ids intern() has handed out: `id` is interned iff 0 < id <=
// this. For checking many ids with one read.
uint32_t interned_count() noexcept;

}  // namespace epprof::core
