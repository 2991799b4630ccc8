// Event args: validating and encoding them into a record's payload, and the
// process-wide table of arg sets (epprof_arg_set_intern): a list of args
// validated and encoded once, which an event then carries as one 4-byte id.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// The graph node an event executes, as the host declared it
// (epprof_node_args_intern): typed values, read by attribution as they are.
struct NodeIdentity {
  uint32_t name;     // interned: the node's name in its graph
  uint32_t op_type;  // interned
  uint32_t index;    // its index in the graph
  uint32_t ep;       // interned: the execution provider that runs it, or 0
};

struct ArgSet {
  std::string payload;             // u32 count + the encoded args, as a record's
  std::vector<std::string> texts;  // owned copies of STRING and JSON values
  std::vector<epprof_arg> args;    // the args, their strings pointing into `texts`
  std::string key;                 // the table's: the payload, then the node if declared
  bool has_node = false;           // the set also declares `node`
  NodeIdentity node{};
};

// The id of the set holding a copy of `args` and, unless `node` is null,
// declaring that node (the same list and node get the same id; the same
// list with another node, or none, another id), or a status:
// INVALID_ARGUMENT, RESOURCE_EXHAUSTED (table full), OUT_OF_MEMORY. `fn`
// names the caller in messages.
epprof_status* intern_arg_set(const char* fn, const epprof_arg* args, size_t num_args, const NodeIdentity* node,
                              uint32_t* out) noexcept;

// The set of `id`, or nullptr for an id intern_arg_set never returned.
const ArgSet* arg_set(uint32_t id) noexcept;

// The number of sets interned, published after each set is in place. A
// plain global (no initialisation guard) so that the hot path's check reads
// one line.
extern std::atomic<uint32_t> g_arg_sets_published;

// The node that an event with this record's args executes: the node of the
// first arg set among its own args that declares one, or nullptr.
const NodeIdentity* node_of(const Record* r) noexcept;

// Whether `id` is a set id.
inline bool is_arg_set(uint32_t id) noexcept {
  return id != 0 && id <= g_arg_sets_published.load(std::memory_order_relaxed);
}

// The payload of an event whose one arg is the set `id` (what encode_args
// writes for it), in the one slot it takes: the hot path's common case.
inline void encode_lone_set(Record* slot, uint32_t id) noexcept {
  const uint32_t words[8] = {1, 0, uint32_t(StoredArg::kSet), id, 0, 0, 0, 0};
  static_assert(sizeof words == kSlotBytes, "one slot");
  std::memcpy(slot, words, sizeof words);
}

// The payload of an event whose one arg is the INT64 {key, value} (what
// encode_args writes for it), in one slot.
inline void encode_lone_int(Record* slot, uint32_t key, int64_t value) noexcept {
  unsigned char bytes[kSlotBytes] = {};
  const uint32_t count = 1;
  std::memcpy(bytes, &count, 4);
  std::memcpy(bytes + 4, &key, 4);
  bytes[8] = uint8_t(StoredArg::kInt64);
  std::memcpy(bytes + 12, &value, 8);
  std::memcpy(slot, bytes, sizeof bytes);
}

}  // namespace epprof::core
