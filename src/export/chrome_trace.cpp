#include "export/chrome_trace.h"

#include <cstring>

#include "core/intern.h"
#include "export/integer_us.h"

namespace epprof::exporter {
ChromeTraceSink::ChromeTraceSink(int fd, bool integer_timestamps)
    : w_(fd), integer_(integer_timestamps) {
  w_.raw("[\n");
}

void ChromeTraceSink::open_item() {
  if (!first_) w_.raw(",\n");
  first_ = false;
}

namespace {

// Pieces of a slice's text after its timestamp, written by every path.
constexpr std::string_view kDurKey = ",\"dur\":";
constexpr std::string_view kSliceArgs = ",\"ph\":\"X\",\"args\":{";
constexpr std::string_view kIdKey = "\"correlation_id\":\"";

// The text of an item up to its timestamp.
void write_head(JsonWriter& w, const char* cat, std::string_view name, int64_t pid, int64_t tid) {
  w.raw("{\"cat\":\"");
  w.raw(cat);
  w.raw("\",\"name\":");
  w.string(name);
  w.raw(",\"pid\":");
  w.i64(pid);
  w.raw(",\"tid\":");
  w.i64(tid);
  w.raw(",\"ts\":");
}

}  // namespace

void ChromeTraceSink::common(const char* cat, std::string_view name, int64_t pid, int64_t tid,
                             int64_t ts_ns) {
  open_item();
  write_head(w_, cat, name, pid, tid);
  ts(ts_ns);
}

void ChromeTraceSink::ts(int64_t ts_ns) {
  if (integer_)
    w_.i64(nearest_us(ts_ns));
  else
    w_.micros(ts_ns, false);
}

void ChromeTraceSink::host_head(const HostEventOut& e) {
  // Slots by the interned name, else by the name's address; an entry
  // without an id compares the text, so any name is written right.
  const uint32_t name_id = e.record ? e.record->name : 0;
  const uint64_t name_key = name_id ? name_id : reinterpret_cast<uintptr_t>(e.name.data()) >> 3;
  // Multiplicative hashing of the whole key: the slot is the product's top
  // bits, which every bit of the key reaches (the small, dense name ids and
  // thread ids that differ in few bits included).
  const uint64_t key = (name_key * 0x9E3779B97F4A7C15ull) ^ (uint64_t(e.tid) * 0xC2B2AE3D27D4EB4Full) ^ e.category;
  const size_t slot = size_t(((key ^ key >> 31) * 0xFF51AFD7ED558CCDull) >> (64 - kHeadBits));
  Head& h = heads_[slot];
  if (!h.used || h.tid != e.tid || h.category != e.category || h.pid != e.pid || h.name_id != name_id ||
      (!name_id && h.name != e.name)) {
    h.used = true;
    h.name_id = name_id;
    h.name.assign(name_id ? std::string_view() : e.name);
    h.pid = e.pid;
    h.tid = e.tid;
    h.category = e.category;
    h.text.assign(",\n");
    JsonWriter text(&h.text);
    write_head(text, category_name(e.category), e.name, e.pid, e.tid);
    text.flush();
    h.size = uint32_t(h.text.size());
    if (h.size <= kHeadText) std::memcpy(h.padded, h.text.data(), h.size);
  }
  if (first_) {  // the first item has no separator in front
    first_ = false;
    w_.raw(std::string_view(h.text).substr(2));
  } else if (h.size <= kHeadText) {
    w_.raw_padded<kHeadText>(h.padded, h.size);
  } else {
    w_.raw(h.text);
  }
}

void ChromeTraceSink::dur(int64_t ts_ns, int64_t dur_ns) {
  w_.raw(kDurKey);
  if (integer_)
    w_.i64(integer_slice(ts_ns, dur_ns).dur);
  else
    w_.micros(dur_ns, false);
}

bool ChromeTraceSink::write_exact_dur(int64_t dur_ns, bool first) {
  if (!integer_ || !needs_exact_dur(dur_ns)) return first;
  if (!first) w_.raw(',');
  w_.raw("\"dur_ns\":\"");
  w_.i64(dur_ns);
  w_.raw('"');
  return false;
}

void ChromeTraceSink::json_arg_value(std::string_view text) {
  // Raw JSON args (type shapes) are written unquoted, as ONNX Runtime does,
  // but only once a real parser accepted them: the trace must stay valid.
  if (json_check_.valid(text))
    w_.raw(text);
  else
    w_.string(text);
}

void ChromeTraceSink::host_event(const HostEventOut& e) {
  host_head(e);
  if (!integer_ && !e.extra_args && (!e.record || e.record->arg_slots == 0)) {
    // The common event, with no args but its id: one capacity check for the
    // rest of it.
    constexpr std::string_view kEnd = "\"}}";
    constexpr size_t kMost =
        2 * JsonWriter::kMaxMicros + kDurKey.size() + kSliceArgs.size() + kIdKey.size() + 20 + kEnd.size();
    if (char* p = w_.reserve(kMost)) {
      p = JsonWriter::put_micros(p, e.ts_ns);
      p = JsonWriter::put(p, kDurKey);
      p = JsonWriter::put_micros(p, e.dur_ns);
      p = JsonWriter::put(p, kSliceArgs);
      p = JsonWriter::put(p, kIdKey);
      p = JsonWriter::put_u64(p, e.correlation_id);
      w_.commit(JsonWriter::put(p, kEnd));
    }
    return;
  }
  ts(e.ts_ns);
  dur(e.ts_ns, e.dur_ns);
  w_.raw(kSliceArgs);
  core::ArgIterator it(e.record);
  core::ArgView a;
  bool first = true;
  while (it.next(a)) {
    if (!first) w_.raw(',');
    first = false;
    const std::string* key = core::interned(a.key);
    w_.string(key ? std::string_view(*key) : std::string_view("?"));
    w_.raw(':');
    if (a.is_int) {
      w_.raw('"');
      w_.i64(a.i64);
      w_.raw('"');
    } else if (a.is_json) {
      json_arg_value(a.str);
    } else {
      w_.string(a.str);
    }
  }
  if (e.extra_args) {
    for (const ExtraArg& x : *e.extra_args) {
      if (!first) w_.raw(',');
      first = false;
      w_.string(x.key);
      w_.raw(':');
      w_.string(x.value);
    }
  }
  first = write_exact_dur(e.dur_ns, first);
  if (!first) w_.raw(',');
  w_.raw(kIdKey);
  w_.u64(e.correlation_id);
  w_.raw("\"}}");
}

void ChromeTraceSink::counter(int64_t pid, int64_t tid, int64_t ts_ns, std::string_view name,
                              std::string_view numeric_value) {
  // Counter tracks need numbers: the caller checked the value is one.
  common("Counter", name, pid, tid, ts_ns);
  w_.raw(",\"ph\":\"C\",\"args\":{");
  w_.string(name);
  w_.raw(':');
  w_.raw(numeric_value);
  w_.raw("}}");
}

void ChromeTraceSink::device_event(const DeviceEventOut& e) {
  common(category_name(e.category), e.name, e.pid, e.tid, e.ts_ns);
  dur(e.ts_ns, e.dur_ns);
  w_.raw(kSliceArgs);
  bool first = true;
  auto field = [&](std::string_view k, std::string_view v) {
    if (!first) w_.raw(',');
    first = false;
    w_.string(k);
    w_.raw(':');
    w_.string(v);
  };
  const Attribution* a = e.attribution;
  for (size_t i = 0; i < e.keys->size(); ++i) {
    // Attribution is the host's word: a plugin arg of the same name yields.
    if (attribution_replaces(a, (*e.keys)[i])) continue;
    field((*e.keys)[i], (*e.values)[i]);
  }
  if (a) {
    if (a->correlation_id) {  // 0: the device event came with no id
      if (!first) w_.raw(',');
      first = false;
      w_.raw(kIdKey);
      w_.u64(a->correlation_id);
      w_.raw('"');
    }
    if (a->is_node) {
      field("op_name", a->op_name);
      w_.raw(",\"node_index\":\"");  // a string, as ONNX Runtime writes its args
      w_.u64(a->node_index);
      w_.raw('"');
      field("parent_name", a->parent_name);
    } else if (a->resolved) {
      field("parent_name", a->parent_name);
    } else {
      field("unattributed", "true");
    }
  }
  write_exact_dur(e.dur_ns, first);
  w_.raw("}}");
  if (!e.flow_id || !a) return;
  common("Flow", "node_to_device", e.pid, a->host_tid, a->host_ts_ns);
  w_.raw(",\"ph\":\"s\",\"id\":");
  w_.u64(e.flow_id);
  w_.raw(",\"args\":{}}");
  common("Flow", "node_to_device", e.pid, e.tid, e.ts_ns);
  w_.raw(",\"ph\":\"f\",\"bp\":\"e\",\"id\":");
  w_.u64(e.flow_id);
  w_.raw(",\"args\":{}}");
}

void ChromeTraceSink::track_name(const TrackName& t) {
  const bool process = t.tid < 0;
  common("__metadata", process ? "process_name" : "thread_name", t.pid, process ? 0 : t.tid, 0);
  w_.raw(",\"ph\":\"M\",\"args\":{\"name\":");
  w_.string(t.name);
  w_.raw("}}");
}

void ChromeTraceSink::metadata(int64_t pid, const MetadataFields& fields) {
  common("Metadata", "epprof_metadata", pid, 0, 0);
  w_.raw(",\"ph\":\"M\",\"args\":{");
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) w_.raw(',');
    w_.string(fields[i].first);
    w_.raw(':');
    write_meta_value(w_, fields[i].second);
  }
  w_.raw("}}");
}

bool ChromeTraceSink::finish(const TraceTail& tail, std::string* error) {
  for (const TrackName& t : tail.tracks) track_name(t);
  if (!tail.metadata.empty()) metadata(tail.pid, tail.metadata);
  w_.raw("\n]\n");
  if (!w_.flush()) {
    if (error) *error = w_.error();
    return false;
  }
  return true;
}

}  // namespace epprof::exporter
