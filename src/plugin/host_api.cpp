// The host's function table for plugins: event creation with validation,
// accessors, and the append-only sink. Every function is a C entry point
// and converts exceptions to statuses.
#include <charconv>
#include <memory>
#include <cstring>

#include "base/c_enum.h"
#include "base/status.h"
#include "core/clock.h"
#include "epprof/profiler.h"
#include "plugin/event.h"

namespace epprof::plugin {

using base::make_status;
using base::null_argument;
namespace {

epprof_status* invalid(const std::string& message) {
  return make_status(EPPROF_INVALID_ARGUMENT, message);
}

epprof_status* event_create(epprof_category category, const char* name, int64_t pid, int64_t tid,
                            int64_t ts_ns, int64_t dur_ns, uint64_t correlation_id,
                            const char* const* keys, const char* const* values, size_t num_args,
                            epprof_event** out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  if (!name) return null_argument(fn, "name");
  if (base::c_enum_value(category) >= EPPROF_CATEGORY_COUNT_)
    return invalid(std::string(fn) + ": unknown category " + std::to_string(int32_t(base::c_enum_value(category))) +
                   " (valid: 0.." + std::to_string(EPPROF_CATEGORY_COUNT_ - 1) + ")");
  if (dur_ns < 0)
    return invalid(std::string(fn) + ": negative duration " + std::to_string(dur_ns) + " ns for '" +
                   name + "'");
  if (num_args > 0 && (!keys || !values))
    return invalid(std::string(fn) + ": arg_keys or arg_values is NULL with num_args = " +
                   std::to_string(num_args));
  for (size_t i = 0; i < num_args; ++i) {
    if (!keys[i]) return invalid(std::string(fn) + ": arg key " + std::to_string(i) + " is NULL");
    if (!values[i])
      return invalid(std::string(fn) + ": value of arg '" + std::string(keys[i]) + "' is NULL");
  }
  auto e = std::make_unique<epprof_event>();
  e->header() = {category, pid, tid, ts_ns, dur_ns, correlation_id};
  e->name = name;
  e->keys.assign(keys, keys + num_args);
  e->values.assign(values, values + num_args);
  *out = e.release();
  return nullptr;
  EPPROF_API_END
}

void event_release(epprof_event* event) {
  if (event && !event->borrowed) delete event;
}

size_t arg_count(const epprof_event* e) { return e->borrowed ? e->view_num_args : e->keys.size(); }

const char* arg_key(const epprof_event* e, size_t i) {
  if (!e->borrowed) return e->keys[i].c_str();
  const char* k = epprof_name(e->view_args[i].key);
  return k ? k : "";
}

const char* arg_value(const epprof_event* e, size_t i) {
  if (!e->borrowed) return e->values[i].c_str();
  const epprof_arg& a = e->view_args[i];
  if (a.type == EPPROF_ARG_NAME || a.type == EPPROF_ARG_JSON_NAME) {
    const char* v = epprof_name(a.value.name);
    return v ? v : "";
  }
  if (a.type != EPPROF_ARG_INT64) return a.value.str ? a.value.str : "";
  char* text = e->int_text[i];
  auto r = std::to_chars(text, text + sizeof e->int_text[i] - 1, a.value.i64);
  *r.ptr = '\0';
  return text;
}

#define EPPROF_CHECK_EVENT(fn)                          \
  if (!event) return null_argument(fn, "event");        \
  static_assert(true, "")

epprof_status* event_get_category(const epprof_event* event, epprof_category* out) {
  EPPROF_CHECK_EVENT("event_get_category");
  if (!out) return null_argument("event_get_category", "out");
  *out = event->category;
  return nullptr;
}

epprof_status* event_get_name(const epprof_event* event, const char** out) {
  EPPROF_CHECK_EVENT("event_get_name");
  if (!out) return null_argument("event_get_name", "out");
  *out = event->borrowed ? event->view_name : event->name.c_str();
  return nullptr;
}

epprof_status* event_get_timing(const epprof_event* event, int64_t* ts_ns, int64_t* dur_ns) {
  EPPROF_CHECK_EVENT("event_get_timing");
  if (!ts_ns || !dur_ns) return null_argument("event_get_timing", "ts_ns or dur_ns");
  *ts_ns = event->ts_ns;
  *dur_ns = event->dur_ns;
  return nullptr;
}

epprof_status* event_get_correlation_id(const epprof_event* event, uint64_t* out) {
  EPPROF_CHECK_EVENT("event_get_correlation_id");
  if (!out) return null_argument("event_get_correlation_id", "out");
  *out = event->correlation_id;
  return nullptr;
}

epprof_status* event_arg_count(const epprof_event* event, size_t* out) {
  EPPROF_CHECK_EVENT("event_arg_count");
  if (!out) return null_argument("event_arg_count", "out");
  *out = arg_count(event);
  return nullptr;
}

epprof_status* event_get_arg(const epprof_event* event, size_t index, const char** key,
                             const char** value) {
  EPPROF_CHECK_EVENT("event_get_arg");
  if (!key || !value) return null_argument("event_get_arg", "key or value");
  if (index >= arg_count(event))
    return invalid("event_get_arg: index " + std::to_string(index) + " is out of range (" +
                   std::to_string(arg_count(event)) + " args)");
  *key = arg_key(event, index);
  *value = arg_value(event, index);
  return nullptr;
}

epprof_status* event_find_arg(const epprof_event* event, const char* key, const char** value) {
  EPPROF_CHECK_EVENT("event_find_arg");
  if (!key || !value) return null_argument("event_find_arg", "key or value");
  *value = nullptr;
  for (size_t i = 0, n = arg_count(event); i < n; ++i) {
    if (std::strcmp(arg_key(event, i), key) == 0) {
      *value = arg_value(event, i);
      break;
    }
  }
  return nullptr;
}

epprof_status* sink_append(epprof_event_sink* sink, const epprof_event* const* events, size_t n) {
  EPPROF_API_BEGIN
  if (!sink) return null_argument(fn, "sink");
  if (n == 0) return nullptr;
  if (!events) return invalid(std::string(fn) + ": events is NULL with num_events = " + std::to_string(n));
  // Validate the whole batch before appending any of it.
  for (size_t i = 0; i < n; ++i)
    if (!events[i])
      return invalid(std::string(fn) + ": event " + std::to_string(i) + " of " + std::to_string(n) +
                     " is NULL; nothing was appended");
  sink->events.reserve(sink->events.size() + n);
  for (size_t i = 0; i < n; ++i) {
    epprof_event copy;
    const epprof_event& e = *events[i];
    copy.header() = e.header();
    copy.name = e.borrowed ? std::string(e.view_name ? e.view_name : "") : e.name;
    for (size_t a = 0, na = arg_count(&e); a < na; ++a) {
      copy.keys.emplace_back(arg_key(&e, a));
      copy.values.emplace_back(arg_value(&e, a));
    }
    sink->events.push_back(std::move(copy));
  }
  return nullptr;
  EPPROF_API_END
}

epprof_status* sink_set_metadata(epprof_event_sink* sink, const char* key, const char* value) {
  EPPROF_API_BEGIN
  if (!sink) return null_argument(fn, "sink");
  if (!key || !value) return null_argument(fn, "key or value");
  sink->metadata[key] = value;
  return nullptr;
  EPPROF_API_END
}

epprof_status* sink_set_track_name(epprof_event_sink* sink, int64_t tid, const char* name) {
  EPPROF_API_BEGIN
  if (!sink) return null_argument(fn, "sink");
  if (!name) return null_argument(fn, "name");
  sink->track_names[tid] = name;
  return nullptr;
  EPPROF_API_END
}

int64_t clock_now_ns() { return core::monotonic_ns(); }

const epprof_host_api kHostApi = {
    EPPROF_EP_ABI_VERSION,
    &epprof_status_create,
    &epprof_status_release,
    &epprof_status_get_code,
    &epprof_status_get_message,
    &clock_now_ns,
    &event_create,
    &event_release,
    &event_get_category,
    &event_get_name,
    &event_get_timing,
    &event_get_correlation_id,
    &event_arg_count,
    &event_get_arg,
    &event_find_arg,
    &sink_append,
    &sink_set_metadata,
    &sink_set_track_name,
};

}  // namespace

const epprof_host_api* host_api() noexcept { return &kHostApi; }

void make_event_view(epprof_event& view, const EventHeader& header, const char* name, const epprof_arg* args,
                     size_t num_args) noexcept {
  view.borrowed = true;
  view.header() = header;
  view.view_name = name;
  view.view_args = args;
  view.view_num_args = num_args;
}

}  // namespace epprof::plugin

extern "C" EPPROF_API const epprof_host_api* epprof_get_host_api(void) {
  return epprof::plugin::host_api();
}
