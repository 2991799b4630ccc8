// A trace loaded for analysis: the slices that reports need, in compact
// form (interned strings, no per-event allocation), with each node and
// device slice assigned to the model_run it belongs to.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace epprof::report {

constexpr uint32_t kNoString = UINT32_MAX;

class StringTable {
 public:
  uint32_t intern(std::string_view s);
  const std::string& at(uint32_t id) const { return strings_[id]; }
  std::string get(uint32_t id) const { return id == kNoString ? std::string() : strings_[id]; }
  uint32_t find(std::string_view s) const;  // kNoString if absent

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> ids_;
};

struct Slice {
  double ts = 0, dur = 0;  // µs
  int64_t pid = 0, tid = 0;
  uint64_t corr = 0;       // correlation id, 0 if none
  uint32_t name = kNoString;      // node slices: the node name without "_kernel_time"
  uint32_t op = kNoString;        // op_name
  uint32_t provider = kNoString;  // provider (node slices)
  uint32_t parent = kNoString;    // parent_name (device slices), or ONNX Runtime's ort_event_name
  uint32_t node_index = kNoString;  // node_index (node slices), ort_node_index (device slices)
  int32_t run = -1;               // index into Trace::runs, -1 if outside every run
  int32_t node = -1;              // device slices: index into Trace::nodes, -1 if unresolved
  uint8_t cat = 0;                // category string interned in Trace::strings is `cat_name`
  uint32_t cat_name = kNoString;
};

struct Run {
  Slice slice;
  int index_in_pid = 0;  // 0 for the first model_run of its process
  bool measured = true;  // false for warm-up runs
};

struct CounterSample {
  uint32_t counter = kNoString;  // counter name
  double value = 0;
  int32_t node = -1;             // the node it belongs to, -1 if none
};

// One sample of a counter track ("ph":"C") where it was taken, for drawing
// the counter over time.
struct CounterPoint {
  uint32_t counter = kNoString;  // counter name, as in CounterSample
  int64_t pid = 0, tid = 0;
  double ts = 0;  // µs
  double value = 0;
};

struct FlowPoint {
  uint64_t id = 0;
  int64_t pid = 0, tid = 0;
  double ts = 0;
  bool start = true;
};

struct Trace {
  StringTable strings;
  std::vector<Run> runs;
  std::vector<Slice> nodes;    // cat Node, excluding ONNX Runtime's fence events
  std::vector<Slice> devices;  // cat Kernel / Memcpy
  std::vector<Slice> others;   // other complete host events (kept only if asked)
  std::vector<FlowPoint> flows;  // kept only if asked
  std::vector<CounterSample> counters;
  std::vector<CounterPoint> counter_points;  // every counter sample in file order; kept only with keep_others
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::map<int64_t, int> warmup;          // per pid, from epprof_metadata
  std::map<int64_t, int64_t> t0_epoch_ns;  // per pid, from epprof_metadata
  std::map<int64_t, std::string> memory_metadata;  // per pid: epprof_metadata's "memory" object, raw JSON
  uint64_t events = 0;
  uint64_t bytes = 0;
  uint64_t unattributed_devices = 0;  // device slices linked to no node (node < 0)
  bool epprof = false;  // an epprof_metadata record was seen
};

// ONNX Runtime's plugin-EP link on a GPU event (its CUDA plugin EP writes
// these args at EndProfiling): ort_correlation_id always, and
// ort_event_name, ort_op_name and ort_node_index as a group when it knew
// the node. Views into the event.
struct OrtGpuLink {
  bool present = false;       // some ort_* arg is there
  std::string_view correlation_id, event_name, op_name, node_index;  // empty if absent
  bool complete_group() const { return !event_name.empty() && !op_name.empty() && !node_index.empty(); }
  bool partial_group() const {
    return (!event_name.empty() || !op_name.empty() || !node_index.empty()) && !complete_group();
  }
};
struct Event;
OrtGpuLink ort_gpu_link(const Event& e);

struct LoadOptions {
  bool keep_others = false;  // non-node host slices and counter samples over time (the HTML timeline)
  bool keep_flows = false;
  int skip_runs = -1;  // warm-up runs per process; -1: from the metadata (0 if none)
  int max_runs = -1;   // measured runs per process after the warm-up ones; -1: all
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// Loads and links the trace; false with *error naming the problem.
bool load_trace(const std::string& path, const LoadOptions& options, Trace* trace, std::string* error);
// The same from bytes in memory.
bool load_trace_buffer(std::string_view data, const LoadOptions& options, Trace* trace, std::string* error);

// True for arg names that describe a node rather than measure it.
bool is_descriptive_arg(std::string_view key);

}  // namespace epprof::report
