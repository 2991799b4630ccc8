// The way out, memory: the scope's memory events (epprof_memory_alloc /
// _free, record.h's kRecordMemory), read in time order with the host
// events, folded into what the trace shows:
//  - per device, the bytes in use (allocations minus frees; arena chunks
//    count as held, not in use), as a counter track "mem_in_use <device>",
//    and the bytes arena chunks hold as "mem_arena_held <device>" (only
//    for a device that has any);
//  - on each node event, ONNX Runtime's args with its meanings, for the
//    device the node allocated on (else the first device seen):
//    mem_bytes_in_use (in use when the node ended), mem_in_use_peak (the
//    device's peak so far), mem_arena_held (held by arena chunks),
//    mem_in_use_delta (what the node allocated minus what it freed), and
//    epprof's mem_allocated_bytes and mem_freed_bytes;
//  - in the metadata, per device: peak, in use at the end, allocations,
//    frees, frees of unknown allocations, and the leak line: bytes still
//    live at the end that were allocated inside a model_run (initializers
//    apart).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/record.h"
#include "export/trace_sink.h"
#include "plugin/event.h"

namespace epprof::scope {

class MemoryLedger {
 public:
  MemoryLedger();

  bool empty() const { return devices_.empty(); }

  // A host event read (in start order) on thread `tid`.
  void host_event(const core::Record& r, int64_t tid, int64_t ts_ns, int64_t end_ns);

  // A memory record at ts_ns on thread `tid`, owned by the innermost host
  // event open there then; returns the device's counter sample to write
  // (track name and value).
  struct Sample {
    std::string track;
    std::string value;
  };
  Sample memory_event(const core::Record& r, int64_t tid, int64_t ts_ns);

  // A plugin's memory event (EPPROF_CATEGORY_MEMORY, epprof/event.h),
  // owned by its correlation id. False, with nothing changed, when its
  // args do not make one (counted: metadata invalid_plugin_events).
  bool plugin_event(const epprof_event& e, Sample* out);

  // The mem_* args of a NODE event with this correlation id (appended).
  void node_args(uint64_t correlation_id, std::vector<exporter::ExtraArg>* out);

  // The "memory" metadata record (an object per device).
  exporter::MetaValue metadata() const;

 private:
  struct Device {
    std::string name;
    int64_t in_use = 0, held = 0, peak = 0;
    uint64_t allocations = 0, frees = 0, unmatched_frees = 0;
  };
  struct Live {
    uint64_t bytes;
    uint32_t device;
    uint8_t tag;
    bool in_run;
  };
  struct Node {
    uint32_t device = 0;  // 0: none of its own
    int64_t allocated = 0, freed = 0;
    int64_t in_use_at_end = 0, peak = 0, held = 0;
    int64_t start_in_use = 0, start_held = 0, start_peak = 0;  // of the default device, when it started
  };

  Device& device(uint32_t name);
  // `owner_is_explicit`: a plugin named the owner (its correlation id),
  // rather than the thread's open events.
  Sample apply(uint32_t device_name, uint64_t owner, bool owner_is_explicit, uint64_t allocation_id, uint64_t bytes,
               bool alloc, uint8_t tag, int64_t ts_ns);
  // The correlation id of the innermost host event open on `tid` at ts_ns
  // (0 if none), from the events read so far: those started by then.
  uint64_t owner(int64_t tid, int64_t ts_ns);

  struct Open {
    int64_t end_ns;
    uint64_t correlation_id;
  };
  std::unordered_map<int64_t, std::vector<Open>> open_;  // per thread, outermost first

  std::map<uint32_t, Device> devices_;
  uint32_t first_device_ = 0;
  // Live allocations by (allocation id, device): ids are the host's or a
  // plugin's, unique per device only.
  struct LiveKey {
    uint64_t allocation_id;
    uint32_t device;
    bool operator==(const LiveKey& o) const { return allocation_id == o.allocation_id && device == o.device; }
  };
  struct LiveHash {
    size_t operator()(const LiveKey& k) const {
      return std::hash<uint64_t>()(k.allocation_id * 0x9E3779B97F4A7C15ull ^ k.device);
    }
  };
  std::unordered_map<LiveKey, Live, LiveHash> live_;
  std::unordered_map<uint64_t, Node> nodes_;  // by correlation id
  uint32_t model_run_name_;
  int64_t run_end_ = INT64_MIN;  // end of the latest model_run read
  uint64_t invalid_plugin_events_ = 0;
};

}  // namespace epprof::scope
