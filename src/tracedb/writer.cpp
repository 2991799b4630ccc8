#include "tracedb/writer.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "tracedb/run_lookup.h"
#include "tracedb/schema.h"

namespace epprof::tracedb {
namespace {

// A value an INTEGER column can hold and give back as the same text: a
// canonical non-negative decimal (no sign, no leading zero) below 2^63.
bool canonical_index(std::string_view v, int64_t* out) {
  if (v.empty() || v.size() > 19 || (v.size() > 1 && v[0] == '0')) return false;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9' || n > (INT64_MAX - (c - '0')) / 10) return false;
    n = n * 10 + (c - '0');
  }
  *out = n;
  return true;
}

}  // namespace

// Rows of integer columns (or NULL: kNull) for one table, inserted kRows at
// a time through one multi-row INSERT, so SQLite's cost per statement
// (step, reset, the statement's own setup) is paid once per batch: about
// a third of the cost of a row of host_events.
class Writer::RowBatch {
 public:
  static constexpr int64_t kNull = INT64_MIN;
  static constexpr int kRows = 16;

  RowBatch(Writer& w, const std::string& table_and_columns, int columns) : w_(w), columns_(columns) {
    std::string one = "(";
    for (int c = 0; c < columns; ++c) one += c ? ",?" : "?";
    one += ")";
    std::string many = "INSERT INTO " + table_and_columns + " VALUES" + one;
    single_ = w.prepare(many.c_str());
    for (int r = 1; r < kRows; ++r) many += "," + one;
    batch_ = w.prepare(many.c_str());
    values_.resize(size_t(columns) * kRows);
  }
  ~RowBatch() {
    sqlite3_finalize(single_);
    sqlite3_finalize(batch_);
  }

  // The slots of a new row, to fill before the next call.
  int64_t* add() {
    if (rows_ == kRows) flush();
    return &values_[size_t(rows_++) * size_t(columns_)];
  }

  void flush() {
    if (rows_ == kRows) {
      bind(batch_, 0, kRows);
      w_.step(batch_);
    } else {
      for (int r = 0; r < rows_; ++r) {
        bind(single_, r, 1);
        w_.step(single_);
      }
    }
    rows_ = 0;
  }

 private:
  void bind(sqlite3_stmt* s, int first_row, int rows) {
    if (!s) return;
    const int64_t* v = &values_[size_t(first_row) * size_t(columns_)];
    for (int i = 0; i < rows * columns_; ++i) {
      if (v[i] == kNull)
        sqlite3_bind_null(s, i + 1);
      else
        sqlite3_bind_int64(s, i + 1, v[i]);
    }
  }

  Writer& w_;
  const int columns_;
  sqlite3_stmt* single_ = nullptr;
  sqlite3_stmt* batch_ = nullptr;
  std::vector<int64_t> values_;
  int rows_ = 0;
};

Writer::Writer(sqlite3* db) : db_(db) {}

std::unique_ptr<Writer> Writer::create(const std::string& path, std::string* error) {
  sqlite3* db = nullptr;
  // NOMUTEX: one thread writes, so no API call need take the connection's lock.
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    if (error) *error = "cannot open SQLite database '" + path + "': " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return nullptr;
  }
  std::unique_ptr<Writer> w(new Writer(db));
  // The file is a temporary that the caller renames into place only once
  // it is complete, so neither a journal nor syncs buy anything.
  const std::string setup = "PRAGMA page_size = 16384;"
                            "PRAGMA journal_mode = OFF;"
                            "PRAGMA synchronous = OFF;"
                            "PRAGMA locking_mode = EXCLUSIVE;"
                            "PRAGMA cache_size = -65536;"
                            "PRAGMA temp_store = MEMORY;"
                            "PRAGMA application_id = " + std::to_string(kApplicationId) + ";"
                            "PRAGMA user_version = " + std::to_string(kSchemaVersion) + ";"
                            "BEGIN;";
  if (!w->exec(setup.c_str()) || !w->exec(kTables)) {
    if (error) *error = w->error_;
    return nullptr;
  }
  w->insert_string_ = w->prepare("INSERT INTO strings(id, value) VALUES(?1, ?2)");
  w->host_rows_ = std::make_unique<RowBatch>(
      *w, "host_events(id, track, cat, name, ts_ns, dur_ns, correlation_id, op, provider, node_index)", 10);
  w->device_rows_ =
      std::make_unique<RowBatch>(*w, "device_events(id, track, cat, name, ts_ns, dur_ns, correlation_id)", 7);
  w->arg_rows_ = std::make_unique<RowBatch>(*w, "args(event_id, seq, key, value, json)", 5);
  w->insert_flow_ = w->prepare(
      "INSERT INTO flows(id, flow_id, cat, name, from_track, from_ts_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  w->end_flow_ = w->prepare("UPDATE flows SET to_track = ?2, to_ts_ns = ?3, binding_point = ?4 WHERE id = ?1");
  w->insert_counter_ =
      w->prepare("INSERT INTO counters(id, track, name, series, ts_ns, value) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  w->insert_track_ = w->prepare("INSERT INTO tracks(id, pid, tid, kind) VALUES(?1, ?2, ?3, ?4)");
  w->name_track_ = w->prepare("UPDATE tracks SET name = ?2 WHERE id = ?1");
  w->upsert_process_ = w->prepare(
      "INSERT INTO processes(pid, name, t0_epoch_ns) VALUES(?1, ?2, ?3) ON CONFLICT(pid) DO UPDATE SET"
      " name = coalesce(excluded.name, name), t0_epoch_ns = coalesce(excluded.t0_epoch_ns, t0_epoch_ns)");
  w->insert_metadata_ =
      w->prepare("INSERT INTO metadata(pid, seq, key, value, json) VALUES(?1, ?2, ?3, ?4, ?5)");
  w->insert_other_ = w->prepare("INSERT INTO other_events(id, pid, json) VALUES(?1, ?2, ?3)");
  if (!w->error_.empty()) {
    if (error) *error = w->error_;
    return nullptr;
  }
  w->session_cat_ = w->intern("Session");
  w->model_run_name_ = w->intern("model_run");
  return w;
}

Writer::~Writer() { close(); }

void Writer::close() {
  host_rows_.reset();
  device_rows_.reset();
  arg_rows_.reset();
  for (sqlite3_stmt** s : {&insert_string_, &insert_flow_, &end_flow_, &insert_counter_, &insert_track_,
                           &name_track_, &upsert_process_, &insert_metadata_, &insert_other_}) {
    sqlite3_finalize(*s);
    *s = nullptr;
  }
  if (db_ && sqlite3_close(db_) != SQLITE_OK && error_.empty()) error_ = std::string("SQLite: ") + sqlite3_errmsg(db_);
  db_ = nullptr;
}

void Writer::fail(const std::string& what) {
  if (error_.empty()) error_ = what + ": " + sqlite3_errmsg(db_);
}

bool Writer::exec(const char* sql) {
  if (!error_.empty()) return false;
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    error_ = std::string("SQLite: ") + (msg ? msg : sqlite3_errmsg(db_));
    sqlite3_free(msg);
    return false;
  }
  return true;
}

sqlite3_stmt* Writer::prepare(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
    fail(std::string("SQLite cannot prepare \"") + sql + "\"");
  return s;
}

bool Writer::step(sqlite3_stmt* s) {
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc == SQLITE_DONE || rc == SQLITE_ROW) return true;
  fail("SQLite write failed");
  return false;
}

int64_t Writer::intern(std::string_view s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  const int64_t id = int64_t(strings_.size()) + 1;
  string_store_.emplace_back(s);
  strings_.emplace(string_store_.back(), id);
  if (insert_string_ && error_.empty()) {
    sqlite3_bind_int64(insert_string_, 1, id);
    sqlite3_bind_text(insert_string_, 2, s.data(), int(s.size()), SQLITE_STATIC);
    step(insert_string_);
  }
  return id;
}

int64_t Writer::track(int64_t pid, int64_t tid, TrackKind kind) {
  const TrackKey key{pid, tid};
  if (key == last_track_key_) return last_track_;
  auto it = tracks_.find(key);
  int64_t id;
  if (it != tracks_.end()) {
    id = it->second;
  } else {
    id = int64_t(tracks_.size()) + 1;
    tracks_.emplace(key, id);
    if (error_.empty()) {
      sqlite3_bind_int64(insert_track_, 1, id);
      sqlite3_bind_int64(insert_track_, 2, pid);
      sqlite3_bind_int64(insert_track_, 3, tid);
      sqlite3_bind_text(insert_track_, 4, kind == TrackKind::kDevice ? "device" : "thread", -1, SQLITE_STATIC);
      step(insert_track_);
    }
  }
  last_track_key_ = key;
  last_track_ = id;
  return id;
}

void Writer::insert_args(int64_t id, const ArgIn* args, size_t n, bool host, int64_t* op, int64_t* provider,
                         int64_t* node_index) {
  int64_t seq = 0;
  for (size_t i = 0; i < n; ++i) {
    const ArgIn& a = args[i];
    if (host && !a.json) {
      if (*op == 0 && a.key == kOpNameKey) {
        *op = intern(a.value);
        continue;
      }
      if (*provider == 0 && a.key == kProviderKey) {
        *provider = intern(a.value);
        continue;
      }
      if (*node_index < 0 && a.key == kNodeIndexKey && canonical_index(a.value, node_index)) continue;
    }
    const int64_t key = intern(a.key), value = intern(a.value);
    int64_t* row = arg_rows_->add();
    row[0] = id;
    row[1] = seq++;
    row[2] = key;
    row[3] = value;
    row[4] = a.json ? 1 : 0;
  }
}

int64_t Writer::insert_event(const EventIn& e, bool host) {
  const int64_t id = next_id_++;
  if (!error_.empty()) return id;
  const int64_t track_id = track(e.pid, e.tid, host ? TrackKind::kThread : TrackKind::kDevice);
  const int64_t cat = e.cat_id ? e.cat_id : intern(e.cat), name = e.name_id ? e.name_id : intern(e.name);
  int64_t op = 0, provider = 0, node_index = -1;
  insert_args(id, e.args, e.num_args, host, &op, &provider, &node_index);
  int64_t* row = (host ? host_rows_ : device_rows_)->add();
  row[0] = id;
  row[1] = track_id;
  row[2] = cat;
  row[3] = name;
  row[4] = e.ts_ns;
  row[5] = e.dur_ns;
  row[6] = e.has_correlation ? int64_t(e.correlation_id) : RowBatch::kNull;
  if (host) {
    row[7] = op ? op : RowBatch::kNull;
    any_op_ = any_op_ || op;
    row[8] = provider ? provider : RowBatch::kNull;
    row[9] = node_index >= 0 ? node_index : RowBatch::kNull;
    if (cat == session_cat_ && name == model_run_name_) runs_.push_back({id, e.pid, e.ts_ns, e.dur_ns});
  } else if (e.has_correlation && e.correlation_id) {
    any_device_correlation_ = true;
  }
  return id;
}

int64_t Writer::host_event(const EventIn& e) { return insert_event(e, true); }
int64_t Writer::device_event(const EventIn& e) { return insert_event(e, false); }

void Writer::flow_start(int64_t pid, uint64_t flow_id, std::string_view cat, std::string_view name, int64_t tid,
                        int64_t ts_ns) {
  const int64_t id = next_id_++;
  if (!error_.empty()) return;
  open_flows_[{pid, flow_id}] = id;
  sqlite3_bind_int64(insert_flow_, 1, id);
  sqlite3_bind_int64(insert_flow_, 2, int64_t(flow_id));
  sqlite3_bind_int64(insert_flow_, 3, intern(cat));
  sqlite3_bind_int64(insert_flow_, 4, intern(name));
  sqlite3_bind_int64(insert_flow_, 5, track(pid, tid, TrackKind::kThread));
  sqlite3_bind_int64(insert_flow_, 6, ts_ns);
  step(insert_flow_);
}

void Writer::flow_end(int64_t pid, uint64_t flow_id, int64_t tid, int64_t ts_ns, std::string_view binding_point) {
  auto it = open_flows_.find({pid, flow_id});
  if (it == open_flows_.end() || !error_.empty()) return;
  sqlite3_bind_int64(end_flow_, 1, it->second);
  sqlite3_bind_int64(end_flow_, 2, track(pid, tid, TrackKind::kDevice));
  sqlite3_bind_int64(end_flow_, 3, ts_ns);
  if (binding_point.empty())
    sqlite3_bind_null(end_flow_, 4);
  else
    sqlite3_bind_text(end_flow_, 4, binding_point.data(), int(binding_point.size()), SQLITE_TRANSIENT);
  step(end_flow_);
  open_flows_.erase(it);
}

void Writer::counter(int64_t pid, int64_t tid, std::string_view name, std::string_view series, int64_t ts_ns,
                     double value) {
  const int64_t id = next_id_++;
  if (!error_.empty()) return;
  sqlite3_bind_int64(insert_counter_, 1, id);
  sqlite3_bind_int64(insert_counter_, 2, track(pid, tid, TrackKind::kThread));
  sqlite3_bind_int64(insert_counter_, 3, intern(name));
  sqlite3_bind_int64(insert_counter_, 4, intern(series));
  sqlite3_bind_int64(insert_counter_, 5, ts_ns);
  sqlite3_bind_double(insert_counter_, 6, value);
  step(insert_counter_);
}

void Writer::track_name(int64_t pid, int64_t tid, std::string_view name, TrackKind kind) {
  if (!error_.empty()) return;
  sqlite3_bind_int64(name_track_, 1, track(pid, tid, kind));
  sqlite3_bind_text(name_track_, 2, name.data(), int(name.size()), SQLITE_TRANSIENT);
  step(name_track_);
}

void Writer::process_name(int64_t pid, std::string_view name) {
  if (!error_.empty()) return;
  sqlite3_bind_int64(upsert_process_, 1, pid);
  sqlite3_bind_text(upsert_process_, 2, name.data(), int(name.size()), SQLITE_TRANSIENT);
  sqlite3_bind_null(upsert_process_, 3);
  step(upsert_process_);
}

void Writer::metadata(int64_t pid, std::string_view key, std::string_view value, bool json) {
  if (!error_.empty()) return;
  sqlite3_bind_int64(insert_metadata_, 1, pid);
  sqlite3_bind_int64(insert_metadata_, 2, meta_seq_[pid]++);
  sqlite3_bind_text(insert_metadata_, 3, key.data(), int(key.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(insert_metadata_, 4, value.data(), int(value.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int(insert_metadata_, 5, json ? 1 : 0);
  step(insert_metadata_);
  int64_t n;
  if (!json && canonical_index(value, &n)) {
    if (key == "t0_epoch_ns") {
      sqlite3_bind_int64(upsert_process_, 1, pid);
      sqlite3_bind_null(upsert_process_, 2);
      sqlite3_bind_int64(upsert_process_, 3, n);
      step(upsert_process_);
    } else if (key == "warmup") {
      warmup_[pid] = n;
    }
  }
}

void Writer::other_event(int64_t pid, std::string_view json) {
  const int64_t id = next_id_++;
  if (!error_.empty()) return;
  sqlite3_bind_int64(insert_other_, 1, id);
  sqlite3_bind_int64(insert_other_, 2, pid);
  sqlite3_bind_text(insert_other_, 3, json.data(), int(json.size()), SQLITE_TRANSIENT);
  step(insert_other_);
}

bool Writer::set_column(const char* update, const std::vector<std::pair<int64_t, int64_t>>& rows) {
  sqlite3_stmt* u = prepare(update);
  for (const auto& [id, value] : rows) {
    if (!u) break;
    sqlite3_bind_int64(u, 1, id);
    sqlite3_bind_int64(u, 2, value);
    step(u);
  }
  sqlite3_finalize(u);
  return error_.empty();
}

// device_events.host_event_id: the first host event of the same process
// with the device event's correlation id (the one attribution linked).
bool Writer::attribute_devices() {
  if (!any_device_correlation_) return true;
  using Key = std::pair<int64_t, int64_t>;  // pid, correlation id
  std::set<Key> wanted;
  struct Device {
    int64_t id;
    Key key;
  };
  std::vector<Device> devices;
  sqlite3_stmt* q = prepare(
      "SELECT d.id, t.pid, d.correlation_id FROM device_events d JOIN tracks t ON t.id = d.track"
      " WHERE d.correlation_id IS NOT NULL AND d.correlation_id != 0");
  while (q && sqlite3_step(q) == SQLITE_ROW) {
    Device d{sqlite3_column_int64(q, 0), {sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2)}};
    wanted.insert(d.key);
    devices.push_back(d);
  }
  sqlite3_finalize(q);
  std::map<Key, int64_t> host;
  q = prepare(
      "SELECT h.id, t.pid, h.correlation_id FROM host_events h JOIN tracks t ON t.id = h.track"
      " WHERE h.correlation_id IS NOT NULL AND h.correlation_id != 0 ORDER BY h.id");
  while (q && sqlite3_step(q) == SQLITE_ROW) {
    const Key k{sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2)};
    if (wanted.count(k)) host.emplace(k, sqlite3_column_int64(q, 0));
  }
  sqlite3_finalize(q);
  std::vector<std::pair<int64_t, int64_t>> links;  // (device event id, host event id)
  for (const Device& d : devices)
    if (auto it = host.find(d.key); it != host.end()) links.emplace_back(d.id, it->second);
  return set_column("UPDATE device_events SET host_event_id = ?2 WHERE id = ?1", links);
}

// The runs table (each process's model_run events in time order, those
// after its warm-up runs measured) and the run of every event: the run
// whose interval holds the event's start; for device work attributed to a
// host event, that event's run.
bool Writer::derive_runs() {
  if (runs_.empty()) return true;
  RunLookup<int64_t, int64_t> lookup;
  for (const RunSeen& r : runs_) lookup.add(r.pid, {r.id, r.ts_ns, r.ts_ns + r.dur_ns});
  lookup.sort();
  sqlite3_stmt* ins = prepare(
      "INSERT INTO runs(id, pid, run_index, measured, ts_ns, dur_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  for (const auto& [pid, v] : lookup.by_pid()) {
    const int64_t warmup = warmup_.count(pid) ? warmup_[pid] : 0;
    for (size_t i = 0; i < v.size() && ins; ++i) {
      sqlite3_bind_int64(ins, 1, v[i].id);
      sqlite3_bind_int64(ins, 2, pid);
      sqlite3_bind_int64(ins, 3, int64_t(i));
      sqlite3_bind_int(ins, 4, int64_t(i) >= warmup ? 1 : 0);
      sqlite3_bind_int64(ins, 5, v[i].start);
      sqlite3_bind_int64(ins, 6, v[i].end - v[i].start);
      step(ins);
    }
  }
  sqlite3_finalize(ins);

  std::vector<std::pair<int64_t, int64_t>> host_runs;  // (event id, run), by id
  sqlite3_stmt* q = prepare("SELECT h.id, t.pid, h.ts_ns FROM host_events h JOIN tracks t ON t.id = h.track ORDER BY h.id");
  while (q && sqlite3_step(q) == SQLITE_ROW) {
    const int64_t run = lookup.find(sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2), 0, 0);
    if (run) host_runs.emplace_back(sqlite3_column_int64(q, 0), run);
  }
  sqlite3_finalize(q);
  set_column("UPDATE host_events SET run = ?2 WHERE id = ?1", host_runs);

  std::vector<std::pair<int64_t, int64_t>> device_runs;
  q = prepare(
      "SELECT d.id, t.pid, d.ts_ns, d.host_event_id FROM device_events d JOIN tracks t ON t.id = d.track");
  while (q && sqlite3_step(q) == SQLITE_ROW) {
    int64_t run = 0;
    if (sqlite3_column_type(q, 3) != SQLITE_NULL) {
      const int64_t host = sqlite3_column_int64(q, 3);
      auto it = std::lower_bound(host_runs.begin(), host_runs.end(), std::make_pair(host, INT64_MIN));
      if (it != host_runs.end() && it->first == host) run = it->second;
    } else {
      run = lookup.find(sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2), 0, 0);
    }
    if (run) device_runs.emplace_back(sqlite3_column_int64(q, 0), run);
  }
  sqlite3_finalize(q);
  return set_column("UPDATE device_events SET run = ?2 WHERE id = ?1", device_runs);
}

bool Writer::create_indexes() {
  for (const Index& index : kIndexes) {
    const std::string_view column = index.column;
    const bool filled = column == "strings.value" || (column == "host_events.op" && any_op_) ||
                        (column == "host_events.run" && !runs_.empty()) ||
                        (column == "device_events.host_event_id" && any_device_correlation_);
    if (filled && !exec(index.sql)) return false;
  }
  return true;
}

bool Writer::finish(std::string* error) {
  for (RowBatch* b : {host_rows_.get(), device_rows_.get(), arg_rows_.get()})
    if (b && error_.empty()) b->flush();
  const bool ok = error_.empty() && attribute_devices() && derive_runs() && create_indexes() && exec(kViews) &&
                  exec("COMMIT");
  close();
  if (!error_.empty() && error) *error = error_;
  return ok && error_.empty();
}

}  // namespace epprof::tracedb
