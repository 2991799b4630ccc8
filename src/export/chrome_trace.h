// The Chrome trace JSON writer: a JSON array of events that tools written
// for ONNX Runtime profiles read (every item has cat, name, pid, tid, ts,
// ph, args; ONNX Runtime's names and arg spellings), plus device tracks,
// flows and one epprof metadata record.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "export/json_writer.h"
#include "export/trace_sink.h"

namespace epprof::exporter {

class ChromeTraceSink final : public TraceSink {
 public:
  // Writes to `fd` (not owned). integer_timestamps: ts/dur as integer µs
  // (export/integer_us.h): both ends of a slice round to the nearest µs; a
  // nonzero slice shorter than that is written 1 µs long and carries its
  // exact length as a "dur_ns" arg.
  ChromeTraceSink(int fd, bool integer_timestamps);

  // An "X" slice with ONNX Runtime's fields and arg spellings.
  void host_event(const HostEventOut& e) override;
  // An "X" slice on the device's track, its args in its plugin's order;
  // then for a flow an "s" item at the host slice and an "f" item (binding
  // point "e") at this one.
  void device_event(const DeviceEventOut& e) override;
  // A "C" item whose one arg is the sample.
  void counter(int64_t pid, int64_t tid, int64_t ts_ns, std::string_view name,
               std::string_view numeric_value) override;
  // A "process_name" or "thread_name" "M" item per track, the
  // "epprof_metadata" "M" item, then the array's end; then writes what the
  // buffer still holds.
  bool finish(const TraceTail& tail, std::string* error) override;

  uint64_t bytes_written() const { return w_.bytes_written(); }

 private:
  void track_name(const TrackName& t);
  void metadata(int64_t pid, const MetadataFields& fields);
  void open_item();
  void common(const char* cat, std::string_view name, int64_t pid, int64_t tid, int64_t ts_ns);
  // A host event's opening text, up to its timestamp, from the head cache.
  void host_head(const HostEventOut& e);
  void ts(int64_t ts_ns);
  void json_arg_value(std::string_view text);
  void dur(int64_t ts_ns, int64_t dur_ns);
  // Integer µs only: a slice under 1 µs gets a "dur_ns" arg. Returns the
  // new `first` of the args object.
  bool write_exact_dur(int64_t dur_ns, bool first);

  // Every host event of one (name, category, pid, tid) opens with the same
  // text, `,\n{"cat":"Node","name":"...","pid":P,"tid":T,"ts":`: it is
  // escaped and formatted once, then copied. Direct-mapped; a collision
  // only rebuilds an entry. An event with a record names itself by the
  // record's interned name id, compared as a number; one without is
  // compared by content, so a caller's string needs no particular lifetime.
  // The text is kept in a fixed buffer when it fits, so that writing it is
  // a fixed-size copy (JsonWriter::raw_padded), not a call to memcpy.
  static constexpr size_t kHeadText = 128;
  struct Head {
    uint32_t name_id = 0;  // the key's interned name, or 0: `name` is the key
    std::string name;
    int64_t pid = 0, tid = 0;
    uint8_t category = 0;
    bool used = false;
    // From the ",\n" that separates it from the item before: in `padded`
    // when it fits (the rest of `padded` is readable filler), else in `text`.
    uint32_t size = 0;
    char padded[kHeadText] = {};
    std::string text;
  };
  static constexpr unsigned kHeadBits = 8;
  static constexpr size_t kHeads = size_t(1) << kHeadBits;
  std::array<Head, kHeads> heads_;

  JsonWriter w_;
  bool integer_;
  bool first_ = true;
  JsonTextCheck json_check_;
};

}  // namespace epprof::exporter
