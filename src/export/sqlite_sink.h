// The SQLite trace writer: the same events as the Chrome trace, into the
// database of tracedb/schema.h, with nanosecond times.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "export/trace_sink.h"
#include "io/atomic_file.h"
#include "tracedb/writer.h"

namespace epprof::exporter {

class SqliteTraceSink final : public TraceSink {
 public:
  // Writes the database into the temporary of `file` (named now: SQLite
  // needs a path), which the caller commits after finish(). An error
  // opening it is reported by finish().
  explicit SqliteTraceSink(io::AtomicFile& file);

  // A host_events row, its args as args rows.
  void host_event(const HostEventOut& e) override;
  // A device_events row, its args as args rows, and for a flow a flows row
  // from the host track and time to the device's.
  void device_event(const DeviceEventOut& e) override;
  // A counters row, the sample parsed as a double.
  void counter(int64_t pid, int64_t tid, int64_t ts_ns, std::string_view name,
               std::string_view numeric_value) override;
  // Names the tail's processes (a track with tid < 0) and threads' tracks,
  // writes a metadata row per field (an object or array field as JSON
  // text), derives the runs and the device work's nodes, adds the indexes
  // and views, and commits.
  bool finish(const TraceTail& tail, std::string* error) override;

 private:
  void track_name(const TrackName& t);
  void metadata(int64_t pid, const MetadataFields& fields);
  // An arg whose value is text the sink formatted (an integer).
  void add_int_arg(std::string_view key, int64_t v);

  // The database's string id of a category, and of an interned event
  // name (core::intern id), once looked up.
  int64_t category_id(uint8_t category);
  int64_t name_id(uint32_t core_name, std::string_view name);

  std::unique_ptr<tracedb::Writer> db_;
  std::vector<int64_t> category_ids_, name_ids_;
  JsonTextCheck json_check_;  // JSON args that do not parse are stored as strings
  std::string open_error_;
  std::vector<tracedb::ArgIn> args_;
  std::string node_index_;  // the text an attributed device event's node_index arg points to
  std::deque<std::string> texts_;  // backing for formatted values, reused (a deque: growing it moves none)
  size_t texts_used_ = 0;
};

}  // namespace epprof::exporter
