// Streaming reader for Chrome-trace JSON: epprof traces and ONNX Runtime
// profiles, as a bare array of events or as an object with "traceEvents".
//
// The file is read in fixed-size chunks; a small scanner finds the extent of
// each top-level event and simdjson On-Demand parses that one event. Memory
// stays at one chunk plus the largest event, whatever the file size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace epprof::report {

enum class ValueKind : uint8_t { kString, kNumber, kBool, kNull, kObject, kArray };

// One member of an event's "args" (or any other field kept raw).
// For strings `value` is the unescaped text; for everything else it is the
// raw JSON of the value.
struct Arg {
  std::string_view key;
  std::string_view value;
  ValueKind kind = ValueKind::kString;
};

// One event, as read. Every view is valid only during the callback.
struct Event {
  uint64_t index = 0;   // position in the event array, from 0
  uint64_t offset = 0;  // byte offset of the event's '{' in the file, or its row id in a database
  bool from_database = false;  // read from a SQLite trace (offset is a row id)
  std::string_view text;  // the event's raw JSON

  std::string_view cat, name, ph;
  bool has_cat = false, has_name = false, has_ph = false;
  bool has_pid = false, has_tid = false, has_ts = false, has_dur = false;
  int64_t pid = 0, tid = 0;
  double ts = 0, dur = 0;
  std::string_view ts_raw, dur_raw;  // the numbers as written
  std::string_view id;               // raw JSON of "id" (flow events), empty if absent
  bool has_args = false;
  std::vector<Arg> args;   // members of "args" when it is an object
  std::vector<Arg> extra;  // other top-level members, raw JSON (kind says which)

  // The arg named `key`, or nullptr.
  const Arg* arg(std::string_view key) const;
};

struct ReadOptions {
  size_t chunk_bytes = size_t(16) << 20;
  // Called now and then with bytes consumed / total (total 0 if unknown).
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// Return false from the callback to stop; set *error to make it a failure.
using EventCallback = std::function<bool(const Event&, std::string* error)>;

struct ReadResult {
  bool ok = true;
  std::string error;       // names the problem, the byte offset and the event index
  uint64_t events = 0;     // events delivered
  uint64_t bytes = 0;      // file size
};

// Reads every event of the trace at `path` in file order.
ReadResult read_trace_file(const std::string& path, const EventCallback& callback,
                           const ReadOptions& options = {});

// The same over bytes in memory (tests, the fuzzer).
ReadResult read_trace_buffer(std::string_view data, const EventCallback& callback,
                             const ReadOptions& options = {});

// Helpers for arg values, which epprof writes as strings ("123") and other
// tools as numbers: false when the value is neither.
bool arg_as_int(const Arg& a, int64_t* out);
bool arg_as_double(const Arg& a, double* out);

}  // namespace epprof::report
