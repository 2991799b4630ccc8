#include "export/sqlite_sink.h"

#include <cstdlib>

#include "core/intern.h"
#include "core/record.h"
#include "export/json_writer.h"

namespace epprof::exporter {

SqliteTraceSink::SqliteTraceSink(io::AtomicFile& file) {
  const std::string path = file.temporary_path(&open_error_);
  if (!path.empty()) db_ = tracedb::Writer::create(path, &open_error_);
}

void SqliteTraceSink::add_int_arg(std::string_view key, int64_t v) {
  if (texts_used_ == texts_.size()) texts_.emplace_back();
  std::string& t = texts_[texts_used_++];
  t = std::to_string(v);
  args_.push_back({key, t, false});
}

int64_t SqliteTraceSink::category_id(uint8_t category) {
  if (category >= category_ids_.size()) category_ids_.resize(size_t(category) + 1, 0);
  int64_t& id = category_ids_[category];
  if (!id) id = db_->intern(category_name(category));
  return id;
}

int64_t SqliteTraceSink::name_id(uint32_t core_name, std::string_view name) {
  if (core_name >= name_ids_.size()) name_ids_.resize(size_t(core_name) + 1024, 0);
  int64_t& id = name_ids_[core_name];
  if (!id) id = db_->intern(name);
  return id;
}

void SqliteTraceSink::host_event(const HostEventOut& e) {
  if (!db_) return;
  args_.clear();
  texts_used_ = 0;
  core::ArgIterator it(e.record);
  core::ArgView a;
  while (it.next(a)) {
    const std::string* key = core::interned(a.key);
    const std::string_view k = key ? std::string_view(*key) : std::string_view("?");
    if (a.is_int)
      add_int_arg(k, a.i64);
    else
      args_.push_back({k, a.str, a.is_json && json_check_.valid(a.str)});
  }
  if (e.extra_args)
    for (const ExtraArg& x : *e.extra_args) args_.push_back({x.key, x.value, false});
  tracedb::EventIn row;
  row.pid = e.pid;
  row.tid = e.tid;
  row.cat_id = category_id(e.category);
  row.name_id = e.record ? name_id(e.record->name, e.name) : db_->intern(e.name);
  row.ts_ns = e.ts_ns;
  row.dur_ns = e.dur_ns;
  row.has_correlation = true;
  row.correlation_id = e.correlation_id;
  row.args = args_.data();
  row.num_args = args_.size();
  db_->host_event(row);
}

void SqliteTraceSink::device_event(const DeviceEventOut& e) {
  if (!db_) return;
  args_.clear();
  const Attribution* a = e.attribution;
  for (size_t i = 0; i < e.keys->size(); ++i)
    if (!attribution_replaces(a, (*e.keys)[i])) args_.push_back({(*e.keys)[i], (*e.values)[i], false});
  if (a) {
    if (a->is_node) {
      node_index_ = std::to_string(a->node_index);
      args_.push_back({"op_name", a->op_name, false});
      args_.push_back({"node_index", node_index_, false});
      args_.push_back({"parent_name", a->parent_name, false});
    } else if (a->resolved) {
      args_.push_back({"parent_name", a->parent_name, false});
    } else {
      args_.push_back({"unattributed", "true", false});
    }
  }
  tracedb::EventIn row;
  row.pid = e.pid;
  row.tid = e.tid;
  row.cat = category_name(e.category);
  row.name = e.name;
  row.ts_ns = e.ts_ns;
  row.dur_ns = e.dur_ns;
  row.has_correlation = a && a->correlation_id;  // 0: the device event came with no id
  row.correlation_id = a ? a->correlation_id : 0;
  row.args = args_.data();
  row.num_args = args_.size();
  db_->device_event(row);
  if (!e.flow_id || !a) return;
  db_->flow_start(e.pid, e.flow_id, "Flow", "node_to_device", a->host_tid, a->host_ts_ns);
  db_->flow_end(e.pid, e.flow_id, e.tid, e.ts_ns, "e");
}

void SqliteTraceSink::track_name(const TrackName& t) {
  if (t.tid < 0)
    db_->process_name(t.pid, t.name);
  else
    db_->track_name(t.pid, t.tid, t.name, tracedb::TrackKind::kThread);
}

void SqliteTraceSink::counter(int64_t pid, int64_t tid, int64_t ts_ns, std::string_view name,
                              std::string_view numeric_value) {
  if (!db_) return;
  // The caller checked that the value is a number.
  db_->counter(pid, tid, name, name, ts_ns, std::strtod(std::string(numeric_value).c_str(), nullptr));
}

void SqliteTraceSink::metadata(int64_t pid, const MetadataFields& fields) {
  std::string json;
  for (const auto& [key, value] : fields) {
    if (value.kind == MetaValue::Kind::kString) {
      db_->metadata(pid, key, value.str, false);
      continue;
    }
    json.clear();
    {
      JsonWriter w(&json);
      write_meta_value(w, value);
      w.flush();
    }
    db_->metadata(pid, key, json, true);
  }
}

bool SqliteTraceSink::finish(const TraceTail& tail, std::string* error) {
  if (!db_) {
    if (error) *error = open_error_;
    return false;
  }
  for (const TrackName& t : tail.tracks) track_name(t);
  metadata(tail.pid, tail.metadata);
  const bool ok = db_->finish(error);
  db_.reset();
  return ok;
}

}  // namespace epprof::exporter
