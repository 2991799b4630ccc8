// `epprof validate`: checks a trace against the trace-format contract of
// DESIGN.md and lists every violation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace epprof::report {

struct Violation {
  std::string kind;     // short name: "json", "required-field", "negative-duration", ...
  std::string message;  // names the event (index, byte offset) and the problem
};

struct ValidateResult {
  bool readable = true;               // false: not a parseable trace (a "json" violation says why)
  uint64_t events = 0;
  std::vector<Violation> violations;  // the first `max_listed`
  std::map<std::string, uint64_t> counts;  // every violation, per kind
  // Device events that name no host event, which the writer admits: ONNX
  // Runtime plugin-EP GPU events with only ort_correlation_id, and those
  // whose ort_event_name resolves to no node (also an "attribution"
  // violation).
  uint64_t unattributed_device_events = 0;
  uint64_t total() const;
};

// Checks: JSON validity; required fields (cat, name, ph; pid/tid/ts/dur on
// complete events; id on flow events); each device event's correlation_id
// resolving to a host event of the same process whose attribution matches
// (op_name, node_index, parent_name); non-negative durations; complete
// events in time order per track; node events inside a model_run of their
// process; flow starts and finishes paired. ONNX Runtime plugin-EP GPU
// events (ort_correlation_id, and ort_event_name / ort_op_name /
// ort_node_index as a group) must name a node event of their process, with
// that node_index and op_name, that starts before them.
ValidateResult validate_trace(const std::string& path, size_t max_listed = 1000);
ValidateResult validate_trace_buffer(const std::string& data, size_t max_listed = 1000);

}  // namespace epprof::report
