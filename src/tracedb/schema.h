// The SQLite trace database: its schema, in one place for the writer
// (tracedb::Writer) and the reader (report's read_trace_db).
//
// Times are integer nanoseconds since the process's T0 (processes.t0_epoch_ns
// is T0 on the wall clock). Repeated text (names, categories, op names, arg
// keys and values) is interned in `strings`; the views join it back, so most
// queries read the views. README.md documents every table, with example
// queries.
#pragma once

#include <string_view>

namespace epprof::tracedb {

// Stored in PRAGMA user_version. A reader refuses a database of a newer
// version; an older one would be upgraded here.
constexpr int kSchemaVersion = 1;
// Stored in PRAGMA application_id ("EPPF"), so `file` and the reader can
// tell an epprof database from any other SQLite file.
constexpr int kApplicationId = 0x45505046;

// Tables, created before the first row is written.
extern const char* const kTables;
// Indexes for the queries the README shows and `epprof report` runs,
// created after the rows (faster than keeping them up to date row by row).
// Each is partial, over the rows that have a value; one over a column that
// no row fills is not created (finding that out would cost a table scan).
struct Index {
  const char* column;  // "host_events.op", ...: what it covers
  const char* sql;
};
extern const Index kIndexes[4];
// Views with the strings joined back.
extern const char* const kViews;

// Well-known arg keys that node events carry in columns rather than in
// `args`. The reader gives them back as args, before the others.
constexpr const char* kOpNameKey = "op_name";
constexpr const char* kProviderKey = "provider";
constexpr const char* kNodeIndexKey = "node_index";
constexpr const char* kCorrelationKey = "correlation_id";

// A path whose extension asks for a database: ".db", ".sqlite", ".sqlite3".
inline bool is_database_path(std::string_view path) {
  auto ends = [&](std::string_view ext) {
    return path.size() > ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  return ends(".db") || ends(".sqlite") || ends(".sqlite3");
}

// The first 16 bytes of every SQLite database file.
constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// The categories of device work ("Kernel", "Memcpy"): complete events
// with these go to `device_events`, every other one to `host_events`.
inline bool is_device_category(std::string_view cat) { return cat == "Kernel" || cat == "Memcpy"; }

}  // namespace epprof::tracedb
