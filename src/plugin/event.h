// The objects behind epprof_event and epprof_event_sink.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/record.h"
#include "epprof/ep_profiler.h"

namespace epprof::plugin {

// What every event has, owned or borrowed, besides its name and args.
struct EventHeader {
  epprof_category category = EPPROF_CATEGORY_SESSION;
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  uint64_t correlation_id = 0;
};

}  // namespace epprof::plugin

// An event: owned (a plugin created it; strings copied) or a borrowed view
// of a host event lent to stop_event (pointers into the caller's frame).
struct epprof_event : epprof::plugin::EventHeader {
  epprof::plugin::EventHeader& header() { return *this; }
  const epprof::plugin::EventHeader& header() const { return *this; }

  bool borrowed = false;

  // Owned events.
  std::string name;
  std::vector<std::string> keys;
  std::vector<std::string> values;

  // Borrowed views.
  const char* view_name = nullptr;
  const epprof_arg* view_args = nullptr;
  size_t view_num_args = 0;
  mutable char int_text[epprof::core::kMaxArgs][24];  // INT64 args formatted on demand
};

struct epprof_event_sink {
  std::vector<epprof_event> events;
  std::map<std::string, std::string> metadata;
  std::map<int64_t, std::string> track_names;
};

namespace epprof::plugin {

// The table handed to plugins.
const epprof_host_api* host_api() noexcept;

// A borrowed view of a host event for stop_event.
void make_event_view(epprof_event& view, const EventHeader& header, const char* name, const epprof_arg* args,
                     size_t num_args) noexcept;

}  // namespace epprof::plugin
