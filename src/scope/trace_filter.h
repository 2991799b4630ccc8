// The way out, the trace filter (epprof_trace_filter, core::
// TraceFilterSettings): which events reach the sinks, so that the JSON and
// SQLite traces leave out the same ones. A host event is judged when it is
// read, before the device work it caused comes up to be written; a plugin
// event when it is written, by its own category and name and by whether
// its host event was kept (scope::Attribution remembers that). What is
// left out is counted, and the metadata says so. epprof/profiler.h
// documents the rules.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "core/profiler.h"
#include "core/record.h"
#include "export/trace_sink.h"
#include "plugin/event.h"

namespace epprof::scope {

class TraceFilter {
 public:
  explicit TraceFilter(const core::TraceFilterSettings& settings);

  // A host event, as read: SESSION events always; others by category, and
  // NODE events by the node filters too.
  bool keep_host(const core::Record& r);
  // A plugin event; `host_kept`: false when the host event it is attributed
  // to was left out.
  bool keep_plugin(const epprof_event& e, bool host_kept);
  // Whether the trace keeps what is written under `category` besides events
  // (counter samples, memory tracks and args).
  bool keeps(epprof_category category) const {
    return s_.categories == 0 || (uint32_t(category) < 32 && ((s_.categories >> category) & 1u));
  }

  uint64_t host_left_out() const { return host_left_out_; }
  uint64_t plugin_left_out() const { return plugin_left_out_; }
  // The "filter" metadata: the filter as given, and what it left out.
  exporter::MetaValue metadata() const;

 private:
  bool keep_node(const core::Record& r);

  const core::TraceFilterSettings& s_;
  uint64_t host_left_out_ = 0, plugin_left_out_ = 0;
};

}  // namespace epprof::scope
