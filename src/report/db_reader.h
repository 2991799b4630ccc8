// Reads a SQLite trace database (tracedb/schema.h) as the events of the
// equivalent Chrome trace, so that every analysis reads .db and .json
// traces alike. read_trace_file() comes here for any file that starts
// with SQLite's header.
#pragma once

#include <string>

#include "report/reader.h"

namespace epprof::report {

// Delivers, in the order they were written: host and device events (their
// args, op_name / provider / node_index and correlation_id among them),
// flows as a start and a finish event, counter samples and other events;
// then thread and process names and each process's epprof_metadata record.
// Times are exact: ns as µs with three decimals. Event::offset is the
// row id (Event::from_database says so).
ReadResult read_trace_db(const std::string& path, const EventCallback& callback, const ReadOptions& options = {});

// True when the first bytes of a file are SQLite's header.
bool is_sqlite_header(std::string_view first_bytes);

}  // namespace epprof::report
