// Internal model of the counter subsystem: counter definitions, the backend
// interface a device implements, and the per-context group set that the
// hot path reads. The C API in counters_api.cpp sits on top.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epprof/counters.h"

namespace epprof::counters {

// Where a counter's value comes from.
enum class Source : uint8_t {
  Backend,       // counted by the device backend (a perf event, the fake PMU)
  HostDuration,  // epprof_dispatch_measures.duration_ns, or the context's wall time
  HostFlops,     // epprof_dispatch_measures.flops
  HostBytes,     // epprof_dispatch_measures.bytes
  Ratio          // numerator / denominator * scale, both counters of the same config
};

// What a backend-counted event occupies on the device's PMU.
enum class Slot : uint8_t {
  None,          // software event: no PMU counter
  Fixed,         // a fixed-function counter of its own (e.g. Intel's cycles, instructions)
  Programmable   // one of the PMU's N programmable counters
};

// How perf_event_open names a counter: perf_event_attr's type and configs.
struct PerfEncoding {
  uint32_t type = 0;
  uint64_t config = 0, config1 = 0, config2 = 0;
};

// One counter. Instances live in a Device's std::deque and are never
// removed, so the const char* handed out through the C API stay valid for
// the life of the process.
struct CounterDef {
  std::string name;
  std::string description;
  std::string unit;
  std::string backend;
  std::string device;
  std::string unsupported_reason;  // empty when supported
  epprof_counter_kind kind = EPPROF_COUNTER_SOFTWARE;
  bool supported = true;
  Source source = Source::Backend;
  Slot slot = Slot::None;
  PerfEncoding perf;  // CPU backend
  // Fake PMU: what one start/stop interval adds.
  uint64_t fake_increment = 0;
  // Ratio: names of the inputs (same device) and the scale.
  std::string numerator;
  std::string denominator;
  double scale = 1.0;

  // What every backend says of each counter first; the rest keeps its default.
  static CounterDef named(std::string name, std::string unit, std::string backend, std::string device,
                          epprof_counter_kind kind, std::string description);
  void fill(epprof_counter_info* out) const;
};

// A planned configuration: counters in the caller's order (ratio inputs
// appended), the pass of each, and for each pass the backend-counted
// members in group order (the order a group read returns them).
struct Plan {
  std::vector<const CounterDef*> counters;
  std::vector<uint32_t> pass_of;
  uint32_t num_passes = 1;
  std::vector<std::vector<size_t>> members;  // [pass] -> counter indices
  std::vector<int> numerator_index;          // [counter] -> index, or -1
  std::vector<int> denominator_index;
};

// The groups of one context, opened for the owner thread. A group read
// writes [nr, time_enabled, time_running, value_0 .. value_{nr-1}], the
// layout of a perf_event group read with PERF_FORMAT_GROUP |
// TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING.
class GroupSet {
 public:
  virtual ~GroupSet() = default;
  // Enables pass `pass`'s group (EPPROF_COUNTER_PASS_MULTIPLEX: all) and
  // disables the others. Returns 0 or an errno.
  virtual int select(uint32_t pass) noexcept = 0;
  // Reads group `pass` into buf[0 .. 3 + members). Returns 0 or an errno.
  virtual int read(uint32_t pass, uint64_t* buf, size_t words) noexcept = 0;
};

// A device's counter source.
class Backend {
 public:
  virtual ~Backend() = default;
  // The PMU's programmable counters (what planning packs against).
  virtual uint32_t num_programmable() const = 0;
  // Counters listed for the device; called once, at registration.
  virtual std::vector<CounterDef> list() = 0;
  // A name the list lacks (a PMU-native event): fills `out` and returns
  // true when the backend can name it; `note` may explain why native names
  // cannot be resolved here. Called under the registry lock.
  virtual bool resolve_native(const std::string& name, CounterDef* out, std::string* note) {
    (void)name, (void)out, (void)note;
    return false;
  }
  // Opens `plan`'s groups for the calling thread. On failure returns an
  // error status (UNSUPPORTED, RESOURCE_EXHAUSTED) naming the counter.
  virtual epprof_status* open(const Plan& plan, std::unique_ptr<GroupSet>* out) = 0;
};

// Backends built into the library.
std::unique_ptr<Backend> make_perf_backend();
std::unique_ptr<Backend> make_fake_pmu_backend();

// The derived counters every device offers (duration_ns, flops, bytes and
// ratios); ipc is supported only where `instructions` and `cycles` are.
std::vector<CounterDef> derived_counters(const std::string& device,
                                         const std::vector<CounterDef>& device_counters);

// Plans `counters` (ratio inputs already appended) for a PMU with
// `num_programmable` counters. Returns "" or why no plan exists.
std::string plan_passes(uint32_t num_programmable, Plan* plan);

}  // namespace epprof::counters
