// What a trace writer receives, format-independent. Each output format is
// one TraceSink; scope::write_trace feeds it host and device events (each
// device event followed by its flow) in end-time order, as ONNX Runtime
// writes them, then track names, metadata, finish.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/record.h"

namespace epprof::exporter {

// ONNX Runtime's category spellings ("Session", "Node", "Kernel", "Api"),
// then epprof's ("Memcpy", "Counter"); "Unknown" past the end.
const char* category_name(uint8_t category) noexcept;

// An arg attached to a host event after it was recorded
// (epprof_event_annotate): written after the event's own args. `number`:
// the value is numeric, so a NODE event also gets a counter track for it.
struct ExtraArg {
  std::string key;
  std::string value;
  bool number = false;
};

struct HostEventOut {
  uint8_t category;
  std::string_view name;
  int64_t pid;
  int64_t tid;
  int64_t ts_ns;   // since T0
  int64_t dur_ns;
  uint64_t correlation_id;
  // For its args (core::ArgIterator); when set, its interned name id is
  // `name`'s, and sinks may key what they cache by it.
  const core::Record* record;
  const std::vector<ExtraArg>* extra_args = nullptr;  // annotations, or nullptr
};

// What the host knew about the event that caused a device event. The
// strings are interned: they live as long as the process.
struct Attribution {
  uint64_t correlation_id;
  bool resolved;          // the id belongs to a host event of this scope
  bool is_node;           // ... a NODE event that declared its node (epprof_node_args_intern)
  std::string_view parent_name;  // the host event's name
  std::string_view op_name;      // the node's op type, when is_node
  uint32_t node_index;           // when is_node
  int64_t host_tid;
  int64_t host_ts_ns;
};

// Attribution is the host's word: a plugin's device event arg of the same
// name as one that attribution writes (correlation_id, parent_name,
// op_name, node_index, unattributed) yields to it.
bool attribution_replaces(const Attribution* a, std::string_view key);

struct DeviceEventOut {
  uint8_t category;
  std::string_view name;
  int64_t pid;
  int64_t tid;
  int64_t ts_ns;
  int64_t dur_ns;
  const std::vector<std::string>* keys;
  const std::vector<std::string>* values;
  const Attribution* attribution;  // nullptr when the event has no correlation id
  // Nonzero: the id of a flow from the host slice the event is attributed
  // to (attribution's host_tid and host_ts_ns) to this one; no flow is
  // written without an attribution.
  uint64_t flow_id;
};

struct TrackName {
  int64_t pid;
  int64_t tid;  // -1: names the process
  std::string name;
};

// A metadata value: a small JSON tree whose strings the sink escapes.
struct MetaValue {
  enum class Kind { kString, kInt, kObject, kArray } kind = Kind::kString;
  std::string str;
  int64_t i64 = 0;
  std::vector<std::pair<std::string, MetaValue>> members;  // kObject
  std::vector<MetaValue> items;                             // kArray

  static MetaValue string(std::string s) {
    MetaValue v;
    v.str = std::move(s);
    return v;
  }
  static MetaValue integer(int64_t i) {
    MetaValue v;
    v.kind = Kind::kInt;
    v.i64 = i;
    return v;
  }
  static MetaValue object() {
    MetaValue v;
    v.kind = Kind::kObject;
    return v;
  }
  static MetaValue array() {
    MetaValue v;
    v.kind = Kind::kArray;
    return v;
  }
  MetaValue& add(std::string key, MetaValue value) {
    members.emplace_back(std::move(key), std::move(value));
    return *this;
  }
};
using MetadataFields = std::vector<std::pair<std::string, MetaValue>>;

// Whether an arg's raw JSON text (a type shape) parses, for the sinks that
// store it as JSON: a real parser's word, cached for texts seen before.
class JsonTextCheck {
 public:
  bool valid(std::string_view text);

 private:
  static constexpr size_t kCacheLimit = 4096;
  std::unordered_set<std::string> valid_;
};

class JsonWriter;
// The JSON text of `v`.
void write_meta_value(JsonWriter& w, const MetaValue& v);

// What a trace ends with, once its events are written: the names of its
// tracks and its epprof metadata record.
struct TraceTail {
  std::vector<TrackName> tracks;
  int64_t pid = 0;          // the metadata record's process
  MetadataFields metadata;  // empty: no metadata record
};

// Where a scope's trace goes: its events, in the order they are to be
// written, then finish() with the tail.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void host_event(const HostEventOut& e) = 0;
  // A device slice, and its flow when it has one.
  virtual void device_event(const DeviceEventOut& e) = 0;
  // A counter sample ("ph":"C" in Chrome traces): track `name`, at ts.
  virtual void counter(int64_t /*pid*/, int64_t /*tid*/, int64_t /*ts_ns*/, std::string_view /*name*/,
                       std::string_view /*numeric_value*/) {}
  // Writes `tail` and completes the trace; false with *error set when it
  // could not be written.
  virtual bool finish(const TraceTail& tail, std::string* error) = 0;
};

}  // namespace epprof::exporter
