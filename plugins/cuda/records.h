// CUPTI activity records as plain structs, and their conversion to epprof
// device events. No CUDA or CUPTI header here: the plugin fills these from
// CUPTI's buffers (cupti_records.h); tests fill them by hand, without a GPU.
//
// CUPTI tags device work with its own 32-bit correlation id (one per API
// call: a launch, a copy). The node's epprof correlation id reaches CUPTI
// through cuptiActivityPushExternalCorrelationId, and comes back as an
// EXTERNAL_CORRELATION record {external id, CUPTI correlation id}, usually
// before the kernel's record but not necessarily in the same buffer: the
// converter joins the two only when it converts, so any order works.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "epprof/event.h"

namespace epprof::cuda {

// CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0: the kind the plugin pushes.
constexpr uint32_t kExternalKindEpprof = 3;

// Mirrors CUpti_ActivityKernel* (CONCURRENT_KERNEL). Timestamps: ns on the
// clock CUPTI's timestamp callback returns (the host's monotonic clock).
struct KernelRecord {
  uint32_t correlation_id = 0;  // CUPTI's
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
  uint16_t registers_per_thread = 0;
  std::string name;
};

// CUpti_ActivityMemcpyKind values (the subset with names here; others
// print as their number).
enum class CopyKind : uint8_t { Unknown = 0, HtoD = 1, DtoH = 2, HtoA = 3, AtoH = 4, AtoA = 5,
                                AtoD = 6, DtoA = 7, DtoD = 8, HtoH = 9, PtoP = 10 };
// "HtoD", ... ; "kind 42" for a value CUPTI added later.
std::string copy_kind_name(uint8_t kind);

// Mirrors CUpti_ActivityMemcpy*.
struct MemcpyRecord {
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0, end_ns = 0, bytes = 0;
  uint8_t copy_kind = 0;  // a CopyKind
  uint32_t device_id = 0, context_id = 0, stream_id = 0;
};

// Mirrors CUpti_ActivityMemset*.
struct MemsetRecord {
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0, end_ns = 0, bytes = 0;
  uint32_t value = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0;
};

// Mirrors CUpti_ActivityMemory4 (CUPTI_ACTIVITY_KIND_MEMORY2): a device
// allocation or release.
struct MemoryRecord {
  uint32_t correlation_id = 0;  // of the API call that made it
  uint64_t timestamp_ns = 0;
  uint64_t address = 0, bytes = 0;
  bool release = false;  // CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE; else an allocation
  uint32_t device_id = 0, stream_id = 0;
};

// Mirrors CUpti_ActivityExternalCorrelation.
struct ExternalCorrelationRecord {
  uint32_t external_kind = kExternalKindEpprof;
  uint64_t external_id = 0;   // what was pushed: the node's epprof correlation id
  uint32_t correlation_id = 0;  // CUPTI's, of the API call made under it
};

// Record timestamps → the host's profiling timeline:
//   ts = start_offset_ns + (record_ns − host_start_ns)
// where host_start_ns is the host's profiling start on the host clock (the
// host_start slot, start_offset_ns 0: exact) or, from hosts before ABI
// version 2, the host clock read at start_profiling.
struct TimeBase {
  int64_t start_offset_ns = 0;
  int64_t host_start_ns = 0;
  int64_t to_timeline(uint64_t record_ns) const {
    return start_offset_ns + (static_cast<int64_t>(record_ns) - host_start_ns);
  }
};

// Records parsed from one CUPTI buffer, delivered to every active profiler.
struct RecordBatch {
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<MemoryRecord> memory;
  std::vector<ExternalCorrelationRecord> external;
  size_t size() const {
    return kernels.size() + memcpys.size() + memsets.size() + memory.size() + external.size();
  }
};

// A converted record, ready for host->event_create.
struct DeviceEvent {
  epprof_category category = EPPROF_CATEGORY_KERNEL;
  std::string name;
  int64_t ts_ns = 0, dur_ns = 0;
  uint64_t correlation_id = 0;  // the node's epprof id; 0 when unattributed
  int64_t track = 0;            // track_of(device, stream)
  std::vector<std::pair<std::string, std::string>> args;
};

struct ConversionStats {
  uint64_t kernels = 0, memcpys = 0, memsets = 0, memory = 0;  // converted
  uint64_t external_correlations = 0;              // of our kind, received
  uint64_t unattributed = 0;    // converted without an external id: kept, marked
  uint64_t outside_scope = 0;   // started before the scope began or after it ended: not converted
  uint64_t clamped = 0;         // end before start (CUPTI gives end 0 for unfinished work): dur 0
};

// One device track per (device, stream).
int64_t track_of(uint32_t device_id, uint32_t stream_id);
std::string track_name(uint32_t device_id, uint32_t stream_id);  // "CUDA device 0 stream 7"

// "[x,y,z]"
std::string format_dim3(const int32_t v[3]);

// Collects records in any order; converts them all at the end. Not
// thread-safe: the owner serialises add() and convert().
class RecordConverter {
 public:
  void add(const KernelRecord& r) { kernels_.push_back(r); }
  void add(const MemcpyRecord& r) { memcpys_.push_back(r); }
  void add(const MemsetRecord& r) { memsets_.push_back(r); }
  void add(const MemoryRecord& r) { memory_.push_back(r); }
  // Records of other external kinds (another tool's) are ignored.
  void add(const ExternalCorrelationRecord& r);
  void add(const RecordBatch& b);

  size_t pending() const { return kernels_.size() + memcpys_.size() + memsets_.size() + memory_.size(); }

  // Every device record whose start lies in [scope_begin_ns, scope_end_ns]
  // (record clock), on the timeline of `time`, sorted by ts. Records without
  // an external id are kept with correlation id 0 and arg unattributed=true.
  // Memory records become EPPROF_CATEGORY_MEMORY events on device
  // "cuda:<device>" (kind, allocation_id = the address, bytes).
  std::vector<DeviceEvent> convert(const TimeBase& time, int64_t scope_begin_ns, int64_t scope_end_ns,
                                   ConversionStats* stats) const;

  // The (device, stream) pairs seen, for track names.
  std::vector<std::pair<uint32_t, uint32_t>> streams() const;

 private:
  uint64_t external_id(uint32_t correlation_id) const;

  std::vector<KernelRecord> kernels_;
  std::vector<MemcpyRecord> memcpys_;
  std::vector<MemsetRecord> memsets_;
  std::vector<MemoryRecord> memory_;
  std::unordered_map<uint32_t, uint64_t> external_;  // CUPTI correlation id → node id
  uint64_t external_count_ = 0;
};

}  // namespace epprof::cuda
