// Event args: validating and encoding them into a record's payload, and the
// process-wide table of arg sets (epprof_arg_set_intern): a list of args
// validated and encoded once, which an event then carries as one 4-byte id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/record.h"
#include "epprof/event.h"
#include "epprof/status.h"

namespace epprof::core {

constexpr uint32_t kMaxArgSets = 1u << 20;

// What plan_args found out about each arg, for encode_args.
struct ArgPlan {
  size_t bytes = 0;             // the encoded payload, count word included
  size_t lens[kMaxArgs];        // inline string lengths
  uint32_t ids[kMaxArgs];       // interned value (NAME, long strings) or set id; 0 if inline
};

// Validates `args` and sizes their payload, interning string values too long
// to copy inline. `fn` names the caller in error messages; `sets_allowed`
// whether EPPROF_ARG_SET may appear. Returns nullptr, or INVALID_ARGUMENT,
// RESOURCE_EXHAUSTED (string table full) or OUT_OF_MEMORY; nothing is
// written either way.
epprof_status* plan_args(const char* fn, const epprof_arg* args, size_t num_args, bool sets_allowed,
                         ArgPlan& plan) noexcept;

// Writes the payload plan_args sized into `out` (plan.bytes, zeroed).
void encode_args(unsigned char* out, const epprof_arg* args, size_t num_args, const ArgPlan& plan) noexcept;

struct ArgSet {
  std::string payload;             // u32 count + the encoded args, as a record's
  std::vector<std::string> texts;  // owned copies of STRING and JSON values
  std::vector<epprof_arg> args;    // the args, their strings pointing into `texts`
};

// The id of the set holding a copy of `args` (the same list gets the same
// id), or a status: INVALID_ARGUMENT, RESOURCE_EXHAUSTED (table full),
// OUT_OF_MEMORY.
epprof_status* intern_arg_set(const epprof_arg* args, size_t num_args, uint32_t* out) noexcept;

// The set of `id`, or nullptr for an id intern_arg_set never returned.
const ArgSet* arg_set(uint32_t id) noexcept;

// Whether `id` is a set id: one word read, for the hot path.
bool is_arg_set(uint32_t id) noexcept;

}  // namespace epprof::core
