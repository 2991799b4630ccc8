#include "report/db_reader.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <charconv>
#include <map>
#include <memory>
#include <vector>

#include <simdjson.h>

#include "tracedb/schema.h"

namespace epprof::report {

bool is_sqlite_header(std::string_view first_bytes) {
  return first_bytes.substr(0, tracedb::kSqliteMagic.size()) == tracedb::kSqliteMagic;
}

namespace {

// ns as µs, exact: three decimals at most, no trailing zeros.
void micros_text(int64_t ns, std::string* out) {
  out->clear();
  const uint64_t mag = ns < 0 ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  if (ns < 0) *out += '-';
  *out += std::to_string(mag / 1000);
  uint64_t frac = mag % 1000;
  if (frac == 0) return;
  char digits[4] = {char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10), 0};
  int n = 3;
  while (digits[n - 1] == '0') --n;
  *out += '.';
  out->append(digits, size_t(n));
}

ValueKind json_kind(std::string_view v) {
  if (v.empty()) return ValueKind::kNull;
  switch (v[0]) {
    case '{': return ValueKind::kObject;
    case '[': return ValueKind::kArray;
    case '"': return ValueKind::kString;
    case 't':
    case 'f': return ValueKind::kBool;
    case 'n': return ValueKind::kNull;
    default: return ValueKind::kNumber;
  }
}

struct Track {
  int64_t pid = 0, tid = 0;
  std::string name;
};

class DbReader {
 public:
  DbReader(const std::string& path, const EventCallback& cb) : path_(path), cb_(cb) {}
  ~DbReader() {
    sqlite3_finalize(args_);
    sqlite3_close(db_);
  }

  // ok stays true when the callback asked to stop.
  ReadResult run() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) res_.bytes = uint64_t(st.st_size);
    (void)(open() && load_strings() && load_tracks() && events() && names() && metadata());
    if (!res_.ok) res_.error = path_ + ": " + res_.error;
    return res_;
  }

 private:
  bool fail(const std::string& what) {
    res_.ok = false;
    if (res_.error.empty()) res_.error = what;
    return false;
  }
  bool sql_fail(const char* what) {
    return fail(std::string(what) + ": " + (db_ ? sqlite3_errmsg(db_) : "cannot open"));
  }

  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) {
      sql_fail("not an epprof trace database (its tables do not match)");
      sqlite3_finalize(s);
      return nullptr;
    }
    return s;
  }

  // A PRAGMA's integer into *v; false, with the error SQLite gives, when
  // it cannot be read: the file is damaged (a truncated copy, say).
  bool pragma(const char* sql, int64_t* v) {
    sqlite3_stmt* s = nullptr;
    const bool ok = sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW;
    if (ok) *v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return ok || sql_fail("a damaged or truncated SQLite database");
  }

  bool open() {
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
      return sql_fail("cannot open the SQLite database");
    int64_t app = 0, version = 0;
    if (!pragma("PRAGMA application_id", &app)) return false;
    if (app != tracedb::kApplicationId)
      return fail("a SQLite database, but not an epprof trace (application_id " + std::to_string(app) + ")");
    if (!pragma("PRAGMA user_version", &version)) return false;
    if (version != tracedb::kSchemaVersion)
      return fail("an epprof trace database of schema version " + std::to_string(version) +
                  "; this epprof reads version " + std::to_string(tracedb::kSchemaVersion));
    return true;
  }

  bool load_strings() {
    sqlite3_stmt* s = prepare("SELECT id, value FROM strings ORDER BY id");
    if (!s) return false;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      const int64_t id = sqlite3_column_int64(s, 0);
      if (id < 1 || id > int64_t(strings_.size()) + 1000000) {
        sqlite3_finalize(s);
        return fail("strings: id " + std::to_string(id) + " is out of range");
      }
      if (size_t(id) >= strings_.size()) strings_.resize(size_t(id) + 1);
      strings_[size_t(id)] = text(s, 1);
      if (!res_.error.empty()) break;
      have_.resize(strings_.size());
      have_[size_t(id)] = true;
    }
    sqlite3_finalize(s);
    return res_.error.empty() && (rc == SQLITE_DONE || sql_fail("reading strings"));
  }

  bool load_tracks() {
    sqlite3_stmt* s = prepare("SELECT id, pid, tid, name FROM tracks ORDER BY id");
    if (!s) return false;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      Track t;
      t.pid = sqlite3_column_int64(s, 1);
      t.tid = sqlite3_column_int64(s, 2);
      t.name = text(s, 3);
      tracks_[sqlite3_column_int64(s, 0)] = std::move(t);
    }
    sqlite3_finalize(s);
    return res_.error.empty() && (rc == SQLITE_DONE || sql_fail("reading tracks"));
  }

  // A text column. SQLite stores any bytes as TEXT; the events must be
  // UTF-8 (they become JSON), so anything else is an error, once.
  std::string text(sqlite3_stmt* s, int col) {
    const unsigned char* p = sqlite3_column_text(s, col);
    if (!p) return {};
    std::string out(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(s, col)));
    if (!simdjson::validate_utf8(out.data(), out.size())) {
      fail(std::string("column ") + sqlite3_column_name(s, col) + " holds text that is not UTF-8");
      out.clear();
    }
    return out;
  }

  // A string by id; false (and the error) for an id the table lacks.
  bool str(sqlite3_stmt* s, int col, std::string_view* out, const char* what) {
    const int64_t id = sqlite3_column_int64(s, col);
    if (id < 1 || size_t(id) >= strings_.size() || !have_[size_t(id)])
      return fail(std::string(what) + " refers to string " + std::to_string(id) + ", which the strings table lacks");
    *out = strings_[size_t(id)];
    return true;
  }

  // Whether string `id` (an arg value marked JSON) parses; one that does
  // not (a damaged database) is read as a string, so output stays JSON.
  bool valid_json(int64_t id) {
    if (json_ok_.size() < strings_.size()) json_ok_.resize(strings_.size(), -1);
    int8_t& ok = json_ok_[size_t(id)];
    if (ok < 0) {
      simdjson::dom::element doc;
      const std::string& t = strings_[size_t(id)];
      ok = parser_.parse(t.data(), t.size(), true).get(doc) == simdjson::SUCCESS;
    }
    return ok == 1;
  }

  bool track(int64_t id, const Track** out) {
    auto it = tracks_.find(id);
    if (it == tracks_.end()) return fail("an event refers to track " + std::to_string(id) + ", which tracks lacks");
    *out = &it->second;
    return true;
  }

  bool deliver(Event& e) {
    e.index = res_.events;
    e.from_database = true;
    std::string error;
    const bool more = cb_(e, &error);
    ++res_.events;
    if (!error.empty()) return fail(error);
    stopped_ = !more;
    return more;
  }

  // The stored args of event `id` (args rows come in event order).
  bool stored_args(int64_t id, Event& e) {
    if (!args_) {
      args_ = prepare("SELECT event_id, key, value, json FROM args ORDER BY event_id, seq");
      if (!args_) return false;
      args_rc_ = sqlite3_step(args_);
    }
    while (args_rc_ == SQLITE_ROW && sqlite3_column_int64(args_, 0) < id) args_rc_ = sqlite3_step(args_);
    while (args_rc_ == SQLITE_ROW && sqlite3_column_int64(args_, 0) == id) {
      Arg a;
      if (!str(args_, 1, &a.key, "an arg") || !str(args_, 2, &a.value, "an arg")) return false;
      a.kind = sqlite3_column_int(args_, 3) && valid_json(sqlite3_column_int64(args_, 2)) ? json_kind(a.value)
                                                                                          : ValueKind::kString;
      e.args.push_back(a);
      args_rc_ = sqlite3_step(args_);
    }
    return args_rc_ == SQLITE_ROW || args_rc_ == SQLITE_DONE || sql_fail("reading args");
  }

  void complete(Event& e, const Track& t, std::string_view ph, int64_t ts_ns) {
    e.has_cat = e.has_name = e.has_ph = e.has_pid = e.has_tid = e.has_ts = true;
    e.ph = ph;
    e.pid = t.pid;
    e.tid = t.tid;
    micros_text(ts_ns, &ts_text_);
    e.ts_raw = ts_text_;
    e.ts = double(ts_ns) / 1000.0;
  }

  void duration(Event& e, int64_t dur_ns) {
    e.has_dur = true;
    micros_text(dur_ns, &dur_text_);
    e.dur_raw = dur_text_;
    e.dur = double(dur_ns) / 1000.0;
  }

  // Every event, flow, counter and other record, by id: the order written.
  bool events() {
    sqlite3_stmt* s = prepare(
        "SELECT 0, id, track, cat, name, ts_ns, dur_ns, correlation_id, op, provider, node_index, NULL, NULL"
        " FROM host_events"
        " UNION ALL SELECT 1, id, track, cat, name, ts_ns, dur_ns, correlation_id, NULL, NULL, NULL, NULL, NULL"
        " FROM device_events"
        " UNION ALL SELECT 2, id, from_track, cat, name, from_ts_ns, NULL, flow_id, to_track, to_ts_ns, NULL,"
        " binding_point, NULL FROM flows"
        " UNION ALL SELECT 3, id, track, NULL, name, ts_ns, NULL, NULL, series, NULL, NULL, NULL, value"
        " FROM counters"
        " UNION ALL SELECT 4, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, json, NULL FROM other_events"
        " ORDER BY 2");
    if (!s) return false;
    int rc;
    std::vector<std::string> texts(4);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      const int kind = sqlite3_column_int(s, 0);
      const int64_t id = sqlite3_column_int64(s, 1);
      Event e;
      e.offset = uint64_t(id);
      const Track* t = nullptr;
      bool ok = true;
      if (kind <= 1) {
        ok = track(sqlite3_column_int64(s, 2), &t) && str(s, 3, &e.cat, "an event") &&
             str(s, 4, &e.name, "an event");
        if (ok) {
          complete(e, *t, "X", sqlite3_column_int64(s, 5));
          duration(e, sqlite3_column_int64(s, 6));
          e.has_args = true;
          if (kind == 0) {
            if (sqlite3_column_type(s, 8) != SQLITE_NULL) {
              Arg a{tracedb::kOpNameKey, {}, ValueKind::kString};
              ok = str(s, 8, &a.value, "an op_name");
              e.args.push_back(a);
            }
            if (ok && sqlite3_column_type(s, 9) != SQLITE_NULL) {
              Arg a{tracedb::kProviderKey, {}, ValueKind::kString};
              ok = str(s, 9, &a.value, "a provider");
              e.args.push_back(a);
            }
            if (ok && sqlite3_column_type(s, 10) != SQLITE_NULL) {
              texts[0] = std::to_string(sqlite3_column_int64(s, 10));
              e.args.push_back({tracedb::kNodeIndexKey, texts[0], ValueKind::kString});
            }
          }
          ok = ok && stored_args(id, e);
          if (ok && sqlite3_column_type(s, 7) != SQLITE_NULL) {
            texts[1] = std::to_string(uint64_t(sqlite3_column_int64(s, 7)));
            e.args.push_back({tracedb::kCorrelationKey, texts[1], ValueKind::kString});
          }
        }
        ok = ok && deliver(e);
      } else if (kind == 2) {
        ok = track(sqlite3_column_int64(s, 2), &t) && str(s, 3, &e.cat, "a flow") && str(s, 4, &e.name, "a flow");
        if (ok) {
          texts[2] = std::to_string(uint64_t(sqlite3_column_int64(s, 7)));
          complete(e, *t, "s", sqlite3_column_int64(s, 5));
          e.id = texts[2];
          e.extra.push_back({"id", texts[2], ValueKind::kNumber});
          e.has_args = true;
          ok = deliver(e);
        }
        if (ok && sqlite3_column_type(s, 8) != SQLITE_NULL) {
          Event f;
          f.offset = uint64_t(id);
          ok = track(sqlite3_column_int64(s, 8), &t);
          if (ok) {
            f.cat = e.cat;
            f.name = e.name;
            complete(f, *t, "f", sqlite3_column_int64(s, 9));
            f.id = texts[2];
            f.extra.push_back({"id", texts[2], ValueKind::kNumber});
            if (sqlite3_column_type(s, 11) != SQLITE_NULL) {
              texts[3] = "\"" + text(s, 11) + "\"";
              f.extra.push_back({"bp", texts[3], ValueKind::kString});
            }
            f.has_args = true;
            ok = deliver(f);
          }
        }
      } else if (kind == 3) {
        std::string_view series;
        ok = track(sqlite3_column_int64(s, 2), &t) && str(s, 4, &e.name, "a counter") &&
             str(s, 8, &series, "a counter");
        if (ok) {
          e.cat = "Counter";
          complete(e, *t, "C", sqlite3_column_int64(s, 5));
          char buf[32];
          auto r = std::to_chars(buf, buf + sizeof buf, sqlite3_column_double(s, 12));
          texts[0].assign(buf, r.ptr);
          e.has_args = true;
          e.args.push_back({series, texts[0], ValueKind::kNumber});
          ok = deliver(e);
        }
      } else {
        const std::string json = text(s, 11);
        std::string inner_error;
        ReadResult r = read_trace_buffer("[" + json + "]", [&](const Event& o, std::string*) {
          Event copy = o;
          copy.offset = uint64_t(id);
          copy.text = {};
          return deliver(copy);
        });
        if (!r.ok && res_.error.empty()) ok = fail("other_events row " + std::to_string(id) + ": " + r.error);
        ok = ok && res_.error.empty() && !stopped_;
      }
      if (!ok) break;
    }
    sqlite3_finalize(s);
    if (!res_.error.empty() || stopped_) return false;
    return rc == SQLITE_ROW || rc == SQLITE_DONE || sql_fail("reading events");
  }

  bool parses(const std::string& text) {
    simdjson::dom::element doc;
    return parser_.parse(text.data(), text.size(), true).get(doc) == simdjson::SUCCESS;
  }

  bool meta_event(int64_t pid, int64_t tid, std::string_view name, std::vector<Arg> args) {
    Event e;
    e.has_cat = e.has_name = e.has_ph = e.has_pid = e.has_tid = e.has_ts = e.has_args = true;
    e.cat = name == "epprof_metadata" ? "Metadata" : "__metadata";
    e.name = name;
    e.ph = "M";
    e.pid = pid;
    e.tid = tid;
    e.ts_raw = "0";
    e.args = std::move(args);
    return deliver(e);
  }

  // Process names, then thread and queue names, as epprof writes them.
  bool names() {
    sqlite3_stmt* s = prepare("SELECT pid, name FROM processes WHERE name IS NOT NULL ORDER BY pid");
    if (!s) return false;
    int rc = SQLITE_DONE;
    bool ok = true;
    while (ok && (rc = sqlite3_step(s)) == SQLITE_ROW) {
      const std::string name = text(s, 1);
      ok = meta_event(sqlite3_column_int64(s, 0), 0, "process_name", {{"name", name, ValueKind::kString}});
    }
    sqlite3_finalize(s);
    if (!ok || (rc != SQLITE_DONE && !sql_fail("reading processes"))) return false;
    for (const auto& [id, t] : tracks_)
      if (!t.name.empty() && !meta_event(t.pid, t.tid, "thread_name", {{"name", t.name, ValueKind::kString}}))
        return false;
    return true;
  }

  bool metadata() {
    sqlite3_stmt* s = prepare("SELECT pid, key, value, json FROM metadata ORDER BY pid, seq");
    if (!s) return false;
    int rc;
    std::vector<std::pair<std::string, std::string>> fields;
    std::vector<bool> json;
    int64_t pid = 0;
    bool ok = true;
    auto flush = [&]() {
      if (fields.empty()) return true;
      std::vector<Arg> args;
      for (size_t i = 0; i < fields.size(); ++i)
        args.push_back({fields[i].first, fields[i].second,
                        json[i] && parses(fields[i].second) ? json_kind(fields[i].second) : ValueKind::kString});
      const bool r = meta_event(pid, 0, "epprof_metadata", std::move(args));
      fields.clear();
      json.clear();
      return r;
    };
    while (ok && (rc = sqlite3_step(s)) == SQLITE_ROW) {
      const int64_t p = sqlite3_column_int64(s, 0);
      if (p != pid) ok = flush();
      pid = p;
      fields.emplace_back(text(s, 1), text(s, 2));
      json.push_back(sqlite3_column_int(s, 3) != 0);
    }
    sqlite3_finalize(s);
    ok = ok && flush();
    return ok && (rc == SQLITE_DONE || sql_fail("reading metadata"));
  }

  const std::string& path_;
  const EventCallback& cb_;
  ReadResult res_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* args_ = nullptr;
  int args_rc_ = SQLITE_DONE;
  bool stopped_ = false;
  std::vector<std::string> strings_;
  std::vector<bool> have_;
  std::vector<int8_t> json_ok_;  // per string id: -1 not checked yet
  simdjson::dom::parser parser_;
  std::map<int64_t, Track> tracks_;
  std::string ts_text_, dur_text_;
};

}  // namespace

ReadResult read_trace_db(const std::string& path, const EventCallback& callback, const ReadOptions& options) {
  ReadResult res = DbReader(path, callback).run();
  if (options.progress) options.progress(res.bytes, res.bytes);
  return res;
}

}  // namespace epprof::report
