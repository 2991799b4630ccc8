// The fixed-size record every host event is stored as, and the encoding of
// its args in the 32-byte slots that follow it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace epprof::core {

// One host event: 32 bytes, written once when the event ends.
struct Record {
  uint64_t ts;              // start, raw ticks
  uint64_t dur;             // duration, ticks
  uint64_t correlation_id;  // never 0
  uint32_t name;            // interned id
  uint8_t category;         // epprof_category
  uint8_t flags;            // kRecord* bits, or 0
  uint16_t arg_slots;       // 32-byte slots of arg payload that follow; with
                            // kRecordInlineSet, the one arg set's id instead.
                            // 0 either way: no args.
};
static_assert(sizeof(Record) == 32, "records are 32 bytes: half a cache line");

// The host measured this event itself (epprof_event_record): dur is in ns,
// kept exact rather than round-tripped through ticks.
constexpr uint8_t kRecordDurationNs = 1;
// A memory event (epprof_memory_alloc / _free), not a slice, in one slot
// like an event: ts is when, dur the bytes (0 for a free), correlation_id
// the allocation id, name the device, category the epprof_memory_tag. Its
// owner is found at the way out: the innermost event open on its thread
// then (scope/memory).
constexpr uint8_t kRecordMemoryAlloc = 2;
constexpr uint8_t kRecordMemoryFree = 4;
constexpr uint8_t kRecordMemory = kRecordMemoryAlloc | kRecordMemoryFree;
// The event's one arg is the arg set whose id arg_slots holds, and no
// payload follows: a node event (its args are its node's set) in one slot
// instead of two. Sets past kMaxInlineSet take a payload slot.
constexpr uint8_t kRecordInlineSet = 8;
constexpr uint32_t kMaxInlineSet = UINT16_MAX;

// The 32-byte slots of arg payload that follow `r`.
inline uint32_t payload_slots(const Record& r) noexcept { return r.flags & kRecordInlineSet ? 0 : r.arg_slots; }

constexpr size_t kSlotBytes = sizeof(Record);
constexpr size_t kMaxArgs = 32;
// Longer string values are interned instead of copied inline, so every
// record with its args fits in one chunk.
constexpr size_t kMaxInlineValue = 256;

// Arg payload: u32 count, then per arg: u32 key, u8 type, 3 bytes padding,
// then the value: i64 | u32 length + bytes (padded to 4) | u32 interned id |
// u32 arg set id (core/args.h: the set's own payload stands in its place).
enum class StoredArg : uint8_t { kString = 0, kInt64 = 1, kJson = 2, kStringId = 3, kJsonId = 4, kSet = 5 };

struct ArgView {
  uint32_t key;
  bool is_json;  // raw JSON text rather than a string
  bool is_int;
  int64_t i64;
  std::string_view str;
};

// Walks the args of one record, those of its arg sets in their place; the
// payload must be well formed (it is produced only by encode_args).
class ArgIterator {
 public:
  explicit ArgIterator(const Record* r) noexcept;
  bool next(ArgView& out) noexcept;

 private:
  struct List {
    const unsigned char* p = nullptr;
    uint32_t count = 0;
    uint32_t seen = 0;
  };
  List list_;   // the list being read
  List outer_;  // the record's own list while a set's is read
  bool in_set_ = false;
};

inline size_t slots_for_bytes(size_t bytes) noexcept { return (bytes + kSlotBytes - 1) / kSlotBytes; }

}  // namespace epprof::core
