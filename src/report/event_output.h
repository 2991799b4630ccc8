// Where `epprof convert` and `merge` write events: a Chrome trace (a JSON
// array) or a trace database (tracedb/), chosen by the output path's
// extension unless the caller says. Both go through io::AtomicFile: the
// file appears, complete, only at finish(); a failure leaves nothing.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "report/reader.h"

namespace epprof::report {

enum class OutputFormat { kAuto, kJson, kDatabase };

struct OutputOptions {
  OutputFormat format = OutputFormat::kAuto;
  // JSON output: write ts/dur as integer µs (export/integer_us.h), else
  // exactly as read (ns precision from a database, the input's text from
  // JSON).
  bool integer_timestamps = false;
};

// Changes merge makes to an event on its way out.
struct EventEdit {
  bool set_pid = false;
  int64_t pid = 0;
  double ts_offset_us = 0;  // added to the ts of every event but metadata
  uint64_t id_shift = 0;    // added to flow ids
  const std::map<std::string, std::string>* replace_args = nullptr;  // key -> raw JSON value
};

class EventOutput {
 public:
  // Refuses an output that is one of `inputs`, or that io::AtomicFile's
  // rules refuse; nullptr with *error naming the path and the reason.
  static std::unique_ptr<EventOutput> create(const std::string& path, const std::vector<std::string>& inputs,
                                             const OutputOptions& options, std::string* error);
  virtual ~EventOutput() = default;

  // False once writing failed; error() says why.
  virtual bool add(const Event& e, const EventEdit* edit = nullptr) = 0;
  // Completes the file and renames it into place.
  virtual bool finish() = 0;
  const std::string& error() const { return error_; }
  bool database() const { return database_; }

 protected:
  std::string error_;
  bool database_ = false;
};

// The event as a JSON object, with `edit` applied (nullptr: none).
// integer_us: ts and dur as integer µs, a sub-µs slice with its "dur_ns".
void event_json(const Event& e, const EventEdit* edit, bool integer_us, std::string* out);

// An exact decimal count of µs (as traces write ts and dur) in ns; false
// for text that is not a finite number.
bool micros_text_to_ns(std::string_view text, int64_t* ns);

}  // namespace epprof::report
