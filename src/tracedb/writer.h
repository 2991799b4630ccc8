// Writes a trace database (schema.h) in one transaction: rows go in as they
// come, and finish() derives what needs the whole trace (runs, which host
// event each device event belongs to), builds the indexes and views, and
// commits. Used by the trace sink of libepprof (export/sqlite_sink) and by
// `epprof convert` and `merge` (report/event_output).
//
// The caller owns the file's fate: it passes the path of a temporary
// (io::AtomicFile::temporary_path()) and commits or discards that once
// finish() returned. Not thread-safe: one thread writes.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace epprof::tracedb {

enum class TrackKind { kThread, kDevice };

struct ArgIn {
  std::string_view key;
  std::string_view value;
  bool json = false;  // `value` is raw JSON (a number, array or object), not a string
};

struct EventIn {
  int64_t pid = 0, tid = 0;
  std::string_view cat, name;
  int64_t cat_id = 0, name_id = 0;  // string ids from Writer::intern, if the caller has them (else 0)
  int64_t ts_ns = 0, dur_ns = 0;
  bool has_correlation = false;
  uint64_t correlation_id = 0;
  const ArgIn* args = nullptr;
  size_t num_args = 0;
};

class Writer {
 public:
  // Creates the schema in the empty file at `path`. nullptr with *error
  // set (naming the path and SQLite's reason) on failure.
  static std::unique_ptr<Writer> create(const std::string& path, std::string* error);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Complete events. Host events keep op_name, provider and node_index in
  // columns (when they are strings, node_index a decimal integer), device
  // events their attribution args in `args`. Returns the event's id.
  int64_t host_event(const EventIn& e);
  int64_t device_event(const EventIn& e);
  // A flow's start; its end, when it comes, completes the row.
  void flow_start(int64_t pid, uint64_t flow_id, std::string_view cat, std::string_view name, int64_t tid,
                  int64_t ts_ns);
  void flow_end(int64_t pid, uint64_t flow_id, int64_t tid, int64_t ts_ns, std::string_view binding_point);
  void counter(int64_t pid, int64_t tid, std::string_view name, std::string_view series, int64_t ts_ns,
               double value);
  void track_name(int64_t pid, int64_t tid, std::string_view name, TrackKind kind);
  void process_name(int64_t pid, std::string_view name);
  // One field of a process's epprof_metadata record. "t0_epoch_ns" also
  // goes to processes, "warmup" decides which runs are measured.
  void metadata(int64_t pid, std::string_view key, std::string_view value, bool json);
  // Any other trace event, kept as its JSON text.
  void other_event(int64_t pid, std::string_view json);

  // The id of `s` in the strings table, added if new: for callers that
  // cache ids of the names they see again and again (EventIn::name_id).
  int64_t intern(std::string_view s);

  // Derives runs and attribution, builds indexes and views, commits and
  // closes the database. False with *error set on the first failure of any
  // call before it. Call once; nothing may be written after it.
  bool finish(std::string* error);

  uint64_t events() const { return next_id_ - 1; }

 private:
  class RowBatch;
  explicit Writer(sqlite3* db);
  void close();
  bool exec(const char* sql);
  sqlite3_stmt* prepare(const char* sql);
  bool step(sqlite3_stmt* s);
  void fail(const std::string& what);
  int64_t track(int64_t pid, int64_t tid, TrackKind kind);
  int64_t insert_event(const EventIn& e, bool host);
  void insert_args(int64_t id, const ArgIn* args, size_t n, bool host, int64_t* op, int64_t* provider,
                   int64_t* node_index);
  bool derive_runs();
  // Runs `update` ("UPDATE t SET c = ?2 WHERE id = ?1") for each (id, value).
  bool set_column(const char* update, const std::vector<std::pair<int64_t, int64_t>>& rows);
  bool create_indexes();
  bool attribute_devices();

  sqlite3* db_;
  std::string error_;
  int64_t next_id_ = 1;

  std::deque<std::string> string_store_;
  std::unordered_map<std::string_view, int64_t> strings_;

  struct TrackKey {
    int64_t pid, tid;
    bool operator==(const TrackKey& o) const { return pid == o.pid && tid == o.tid; }
  };
  struct TrackHash {
    size_t operator()(const TrackKey& k) const { return std::hash<int64_t>()(k.pid * 1000003 ^ k.tid); }
  };
  std::unordered_map<TrackKey, int64_t, TrackHash> tracks_;
  TrackKey last_track_key_{INT64_MIN, INT64_MIN};
  int64_t last_track_ = 0;

  struct RunSeen {
    int64_t id, pid, ts_ns, dur_ns;
  };
  std::vector<RunSeen> runs_;
  std::map<int64_t, int64_t> warmup_;   // pid -> warm-up runs
  std::map<int64_t, int64_t> meta_seq_;  // pid -> next metadata seq
  std::map<std::pair<int64_t, uint64_t>, int64_t> open_flows_;  // (pid, flow id) -> row id
  bool any_device_correlation_ = false;
  bool any_op_ = false;
  int64_t model_run_name_ = -1, session_cat_ = -1;

  std::unique_ptr<RowBatch> host_rows_, device_rows_, arg_rows_;
  sqlite3_stmt* insert_string_ = nullptr;
  sqlite3_stmt* insert_flow_ = nullptr;
  sqlite3_stmt* end_flow_ = nullptr;
  sqlite3_stmt* insert_counter_ = nullptr;
  sqlite3_stmt* insert_track_ = nullptr;
  sqlite3_stmt* name_track_ = nullptr;
  sqlite3_stmt* upsert_process_ = nullptr;
  sqlite3_stmt* insert_metadata_ = nullptr;
  sqlite3_stmt* insert_other_ = nullptr;
};

}  // namespace epprof::tracedb
