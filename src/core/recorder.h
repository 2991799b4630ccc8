// Per-profiler event storage. Each recording thread owns a ThreadStream and
// appends records into its current 64 KiB chunk with no lock, allocation or
// syscall. A full chunk is handed to the recorder (one mutex acquisition per
// chunk, i.e. per ~2,000 events). When the chunks in memory reach the memory
// budget, the full ones are sorted and spilled to an unlinked file; only
// when the disk budget is also exhausted are events dropped, and counted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/record.h"

namespace epprof::core {

constexpr size_t kChunkBytes = 64 * 1024;
constexpr size_t kChunkSlots = kChunkBytes / kSlotBytes - 2;  // room for the header
constexpr size_t kMaxOpenEvents = 256;

struct Chunk {
  uint32_t stream = 0;   // index of the owning ThreadStream
  uint32_t used = 0;     // slots used
  uint32_t events = 0;   // records (entries) stored
  uint32_t pad = 0;
  Chunk* next = nullptr;
  alignas(64) Record slots[kChunkSlots];
};
static_assert(sizeof(Chunk) <= kChunkBytes, "a chunk fits its budget unit");

struct OpenEvent {
  uint64_t ts;
  uint64_t correlation_id;
  uint32_t name;
  uint8_t category;
};

// The recording state of one thread in one profiler. An event that ends
// right after a long kernel finds every cache cold, so what an event touches
// besides the slots it writes is packed into the stream's first cache line:
// the write position in the current chunk (the chunk's header is updated
// only when it is handed over) and the innermost open event.
struct alignas(64) ThreadStream {
  Chunk* current = nullptr;
  uint32_t used = 0;        // slots used in `current`
  uint32_t events = 0;      // entries in `current`
  uint32_t known_sets = 0;  // arg set ids up to this one are valid (Profiler::end)
  uint32_t depth = 0;       // open events, the innermost included
  // The innermost open event is `top` while top_live, else open[depth - 1];
  // the outer ones are always in open[]. A begin moves a live top down to
  // open[], an end leaves none live, so a run of sibling events (a graph's
  // nodes) never touches open[].
  uint32_t top_live = 0;
  OpenEvent top{};
  // Cold from here on (tid fills the first line).
  int64_t tid = 0;
  uint32_t index = 0;
  OpenEvent open[kMaxOpenEvents];

  const OpenEvent& innermost() const { return top_live ? top : open[depth - 1]; }
  void push(const OpenEvent& e) {
    if (top_live) open[depth - 1] = top;
    top = e;
    top_live = 1;
    ++depth;
  }
  void pop() {
    top_live = 0;
    --depth;
  }
};
static_assert(offsetof(ThreadStream, index) == 64, "an event touches one line of its stream");

// One entry of a run's index: the record, sorted by (ts, ~dur), so that at
// equal starts the longer (outer) event comes first. Only the pointer: the
// merge reads the key through it, from a record its consumer reads next
// anyway, and a 1M-event index is 8 MB of fresh memory rather than 24 (each
// fresh page costs microseconds on a virtual machine; see recorder.cpp).
struct IndexEntry {
  const Record* rec;
};

// A sorted sequence of entries (a record followed by its arg slots), handed
// out a window at a time: [begin(), end()) is in order, and it and its
// records stay valid until refill().
class RunCursor {
 public:
  virtual ~RunCursor() = default;
  uint32_t stream() const noexcept { return stream_; }
  const IndexEntry* begin() const noexcept { return begin_; }
  const IndexEntry* end() const noexcept { return end_; }
  // Replaces the window with the next one; false, with an empty window,
  // once the run is exhausted.
  virtual bool refill() = 0;
  // True when the records stay where they are until the recorder goes
  // (chunks in memory), false when a refill() reuses their memory (a
  // spilled run's read buffer).
  bool records_stable() const noexcept { return records_stable_; }

 protected:
  bool records_stable_ = true;
  const IndexEntry* begin_ = nullptr;
  const IndexEntry* end_ = nullptr;
  uint32_t stream_ = 0;
};

struct RecorderStats {
  uint64_t events = 0;          // entries recorded (kept or dropped)
  uint64_t dropped_events = 0;  // lost to the disk budget
  uint64_t spilled_bytes = 0;
  uint64_t spill_runs = 0;
  uint64_t peak_chunks = 0;
};

class Recorder {
 public:
  // Throws std::runtime_error when the spill file cannot be created later;
  // creation itself does no I/O.
  Recorder(uint64_t memory_budget_bytes, uint64_t disk_budget_bytes, std::string spill_dir);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Registers the calling thread. Thread-safe; allocates.
  ThreadStream* add_thread(int64_t tid);

  // Space for an entry of `slots` slots in the stream's current chunk.
  Record* reserve(ThreadStream& s, uint32_t slots) {
    if (__builtin_expect(s.used + slots > kChunkSlots, 0)) rollover(s);
    return reserve_in_chunk(s, slots);
  }
  // The same when the caller knows `slots` fit in the current chunk.
  static Record* reserve_in_chunk(ThreadStream& s, uint32_t slots) {
    Record* r = &s.current->slots[s.used];
    s.used += slots;
    ++s.events;
    return r;
  }

  // After recording has stopped: hands every chunk over and returns sorted
  // cursors over everything kept (spilled runs and the chunks in memory).
  std::vector<std::unique_ptr<RunCursor>> finish();

  const std::vector<std::unique_ptr<ThreadStream>>& streams() const { return streams_; }
  // After finish(): the union of every kept record's flags (record.h), so
  // the way out knows, say, whether any memory event was recorded.
  uint8_t record_flags() const { return record_flags_; }
  RecorderStats stats() const;
  // A message set when the spill file failed (events were dropped then).
  std::string spill_error() const;

 private:
  void rollover(ThreadStream& s);
  // Moves the stream's write position into its current chunk's header.
  static void seal(ThreadStream& s) {
    s.current->used = s.used;
    s.current->events = s.events;
    s.used = s.events = 0;
  }
  Chunk* take_chunk_locked();
  Chunk* carve_chunk_locked();
  void spill_locked();
  void spill_run_locked(uint32_t stream, const std::vector<Chunk*>& chunks,
                        std::vector<IndexEntry>& index, std::vector<unsigned char>& out);
  bool ensure_spill_file_locked();

  const uint64_t budget_chunks_;
  const uint64_t disk_budget_;
  const std::string spill_dir_;

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<ThreadStream>> streams_;
  std::vector<Chunk*> full_;   // handed over, in order, not yet spilled
  std::vector<Chunk*> finished_;  // read by the cursors finish() returned
  Chunk* free_ = nullptr;      // recycled chunks
  uint64_t allocated_ = 0;     // chunks alive
  // Chunks are carved from slabs mapped with MAP_POPULATE (see carve_chunk_locked).
  struct Slab {
    void* base;
    size_t bytes;
  };
  std::vector<Slab> slabs_;
  unsigned char* slab_next_ = nullptr;
  unsigned char* slab_end_ = nullptr;
  size_t next_slab_chunks_ = 4;
  int spill_fd_ = -1;
  uint64_t spill_bytes_ = 0;
  struct SpillRun {
    uint64_t offset;
    uint64_t bytes;
    uint32_t stream;
  };
  std::vector<SpillRun> runs_;
  RecorderStats stats_;
  std::string spill_error_;
  uint8_t record_flags_ = 0;  // written under mu_ (spill) or by finish()
  bool warned_drop_ = false;
};

}  // namespace epprof::core
