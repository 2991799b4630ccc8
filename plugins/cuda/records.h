// CUPTI activity records as plain structs, and their conversion to epprof
// device events. No CUDA or CUPTI header here: the plugin fills these from
// CUPTI's buffers (cupti_records.h); tests fill them by hand, without a GPU.
//
// How CUPTI ties device work to the node that caused it:
//  - Every CUDA API call gets a 32-bit CUPTI correlation id. A runtime call
//    (cudaLaunchKernel, cudaMemcpyAsync) and the driver call it makes
//    (cuLaunchKernel, cuMemcpyAsync) get one each.
//  - The plugin pushes the node's epprof correlation id as an external id
//    (cuptiActivityPushExternalCorrelationId). CUPTI then puts an
//    EXTERNAL_CORRELATION record {external id, API correlation id} in front
//    of each API record made under it; only in front of API records, so
//    the runtime and driver API kinds must be enabled for any to come.
//  - A kernel record carries the correlation id of the API call that
//    launched it (runtime or driver, whichever launched it). A memcpy
//    record carries the driver call's id and, in runtimeCorrelationId, the
//    runtime call's. A memset record carries one id.
// The converter joins on the id an external record names, trying the
// record's own id first and then its runtime id. Records arrive in any
// order and any buffer: the join happens only when it converts.
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

// What every timed device record of CUPTI's carries: the id of the API call
// that issued it, its times, and where it ran. Timestamps: ns on the clock
// CUPTI's timestamp callback returns (the host's monotonic clock).
struct DeviceWork {
  uint32_t correlation_id = 0;  // CUPTI's; for a copy, the driver call's
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0;
};

// Mirrors CUpti_ActivityKernel* (CONCURRENT_KERNEL).
struct KernelRecord : DeviceWork {
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
struct MemcpyRecord : DeviceWork {
  uint64_t bytes = 0;
  uint8_t copy_kind = 0;  // a CopyKind
  uint32_t runtime_correlation_id = 0;  // the runtime call's; 0 for a copy made through the driver API
};

// Mirrors CUpti_ActivityMemset*.
struct MemsetRecord : DeviceWork {
  uint64_t bytes = 0;
  uint32_t value = 0;
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

// Mirrors CUpti_ActivityAPI (RUNTIME and DRIVER kinds): one CUDA API
// call. Used to join and to check the clock; exported only when asked.
struct ApiRecord {
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0, end_ns = 0;  // host clock (CUPTI's timestamp callback)
  uint32_t cbid = 0;                  // the callback id of the function called
  uint32_t thread_id = 0;
  bool driver = false;  // a driver API call (cu*); else a runtime one (cuda*)
  const char* name = nullptr;  // "cudaLaunchKernel", static (CUPTI's); null when unknown
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
  std::vector<ApiRecord> api;
  size_t size() const {
    return kernels.size() + memcpys.size() + memsets.size() + memory.size() + external.size() + api.size();
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
  uint64_t api = 0;                    // API records received (joined on; exported only when asked)
  uint64_t external_correlations = 0;  // of our kind, received
  uint64_t unattributed = 0;   // converted without an external id: kept, marked
  uint64_t outside_scope = 0;  // started before the scope began or after it ended: not converted
  uint64_t untimed = 0;        // start and end 0: CUPTI could not time it; not converted
  uint64_t clamped = 0;        // end before start (CUPTI gives end 0 for unfinished work): dur 0
  // Device records whose API call is known, and those of them that start
  // before the call did (a clock error: work cannot start before its
  // launch), with the largest such lead.
  uint64_t with_call = 0, before_call = 0;
  int64_t worst_before_call_ns = 0;
  // The clock probes matched to their records, and the error bound they
  // give (ClockProbe): per group the tightest, and the loosest of the
  // groups; -1 when no probe was matched. `probe_bounds` lists each
  // matched probe's bound by group, for the metadata.
  uint64_t probes_matched = 0;
  int64_t clock_error_bound_ns = -1;
  std::string probe_bounds;  // "start 5120 3990 4001; end 4100"
};

// External ids at and above this are the plugin's own (clock probes), never
// a node's: libepprof's ids count up from 1.
constexpr uint64_t kProbeExternalIdBase = uint64_t(1) << 63;

// A clock probe: the plugin read the host clock, issued one small device
// operation under external id `id`, waited for it, and read the host clock
// again. The operation truly ran inside [host_before_ns, host_after_ns];
// where CUPTI put it says how far CUPTI's device timestamps can be off the
// host clock there. If the record reads [s, e] and the clock error is x,
// the true times are s − x and e − x, both inside the window, so
//   e − host_after_ns ≤ x ≤ s − host_before_ns,
// and |x| ≤ max(|s − host_before_ns|, |e − host_after_ns|). The window
// includes the launch and the wait, so a probe gives a bound no tighter than
// them; several probes taken at one time (a group) each bound the same
// error, and the tightest holds.
struct ClockProbe {
  uint64_t id = 0;  // kProbeExternalIdBase + n
  int64_t host_before_ns = 0, host_after_ns = 0;
  uint32_t group = 0;  // probes taken together: 0 at the scope's start, 1 at its end
};

// One device track per (device, stream).
int64_t track_of(uint32_t device_id, uint32_t stream_id);
std::string track_name(uint32_t device_id, uint32_t stream_id);  // "CUDA device 0 stream 7"
// Exported API records: one track per host thread, named "CUDA API thread <tid>".
constexpr uint32_t kApiTrackDevice = 0xffffffffu;
inline int64_t api_track_of(uint32_t thread_id) { return track_of(kApiTrackDevice, thread_id); }

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
  void add(const ApiRecord& r) { api_.emplace(r.correlation_id, r); }
  // Records of other external kinds (another tool's) are ignored.
  void add(const ExternalCorrelationRecord& r);
  void add(const RecordBatch& b);
  void add(const ClockProbe& p) { probes_.push_back(p); }

  // Also convert the API records into EPPROF_CATEGORY_API events, on a
  // track of their thread (off by default: they are many, and serve the join).
  void set_export_api(bool on) { export_api_ = on; }

  size_t pending() const {
    return kernels_.size() + memcpys_.size() + memsets_.size() + memory_.size() + (export_api_ ? api_.size() : 0);
  }

  // Every device record whose start lies in [scope_begin_ns, scope_end_ns]
  // (record clock), on the timeline of `time`, sorted by ts. Records without
  // an external id are kept with correlation id 0 and arg unattributed=true.
  // Memory records become EPPROF_CATEGORY_MEMORY events on device
  // "cuda:<device>" (kind, allocation_id = the address, bytes). The records
  // of clock probes are not converted: they give stats->clock_error_bound_ns.
  std::vector<DeviceEvent> convert(const TimeBase& time, int64_t scope_begin_ns, int64_t scope_end_ns,
                                   ConversionStats* stats) const;

  // The (device, stream) pairs seen, for track names.
  std::vector<std::pair<uint32_t, uint32_t>> streams() const;

 private:
  // The node id the external records give the API call `correlation_id`,
  // else that of `fallback_id` (a copy's runtime call), else 0.
  uint64_t external_id(uint32_t correlation_id, uint32_t fallback_id = 0) const;
  const ApiRecord* call_of(uint32_t correlation_id, uint32_t fallback_id = 0) const;

  std::vector<KernelRecord> kernels_;
  std::vector<MemcpyRecord> memcpys_;
  std::vector<MemsetRecord> memsets_;
  std::vector<MemoryRecord> memory_;
  std::unordered_map<uint32_t, uint64_t> external_;  // CUPTI correlation id → node id
  std::unordered_map<uint32_t, ApiRecord> api_;      // CUPTI correlation id → its call
  std::vector<ClockProbe> probes_;
  uint64_t external_count_ = 0;
  bool export_api_ = false;
};

}  // namespace epprof::cuda
