#include "tracedb/schema.h"

namespace epprof::tracedb {

// What host and device events have in common: their first columns, and
// the joins that name their track, category and name in the views.
#define EVENT_COLUMNS                                    \
  "  id INTEGER PRIMARY KEY,\n"                          \
  "  track INTEGER NOT NULL REFERENCES tracks(id),\n"    \
  "  cat INTEGER NOT NULL REFERENCES strings(id),\n"     \
  "  name INTEGER NOT NULL REFERENCES strings(id),\n"    \
  "  ts_ns INTEGER NOT NULL,\n"                          \
  "  dur_ns INTEGER NOT NULL,\n"                         \
  "  correlation_id INTEGER,\n"
#define EVENT_JOINS                           \
  "  JOIN tracks t ON t.id = e.track\n"       \
  "  JOIN strings c ON c.id = e.cat\n"        \
  "  JOIN strings n ON n.id = e.name"

// Every event, flow, counter sample and other record takes its id from one
// sequence, in the order it was written: the reader gives them back in
// that order, so a JSON trace converted to a database and back keeps its
// event order.
const char* const kTables = R"SQL(
CREATE TABLE strings(
  id INTEGER PRIMARY KEY,
  value TEXT NOT NULL);
CREATE TABLE processes(
  pid INTEGER PRIMARY KEY,
  name TEXT,
  t0_epoch_ns INTEGER);
CREATE TABLE tracks(
  id INTEGER PRIMARY KEY,
  pid INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  kind TEXT NOT NULL,
  name TEXT,
  UNIQUE(pid, tid));
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  pid INTEGER NOT NULL,
  run_index INTEGER NOT NULL,
  measured INTEGER NOT NULL,
  ts_ns INTEGER NOT NULL,
  dur_ns INTEGER NOT NULL);
CREATE TABLE host_events(
)SQL" EVENT_COLUMNS R"SQL(  op INTEGER REFERENCES strings(id),
  provider INTEGER REFERENCES strings(id),
  node_index INTEGER,
  run INTEGER REFERENCES runs(id));
CREATE TABLE device_events(
)SQL" EVENT_COLUMNS R"SQL(  host_event_id INTEGER REFERENCES host_events(id),
  run INTEGER REFERENCES runs(id));
CREATE TABLE args(
  event_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  key INTEGER NOT NULL REFERENCES strings(id),
  value INTEGER NOT NULL REFERENCES strings(id),
  json INTEGER NOT NULL,
  PRIMARY KEY(event_id, seq)) WITHOUT ROWID;
CREATE TABLE flows(
  id INTEGER PRIMARY KEY,
  flow_id INTEGER NOT NULL,
  cat INTEGER NOT NULL REFERENCES strings(id),
  name INTEGER NOT NULL REFERENCES strings(id),
  from_track INTEGER NOT NULL REFERENCES tracks(id),
  from_ts_ns INTEGER NOT NULL,
  to_track INTEGER REFERENCES tracks(id),
  to_ts_ns INTEGER,
  binding_point TEXT);
CREATE TABLE counters(
  id INTEGER PRIMARY KEY,
  track INTEGER NOT NULL REFERENCES tracks(id),
  name INTEGER NOT NULL REFERENCES strings(id),
  series INTEGER NOT NULL REFERENCES strings(id),
  ts_ns INTEGER NOT NULL,
  value REAL NOT NULL);
CREATE TABLE metadata(
  pid INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  json INTEGER NOT NULL,
  PRIMARY KEY(pid, seq)) WITHOUT ROWID;
CREATE TABLE other_events(
  id INTEGER PRIMARY KEY,
  pid INTEGER,
  json TEXT NOT NULL);
)SQL";

const Index kIndexes[4] = {
    {"strings.value", "CREATE INDEX strings_by_value ON strings(value)"},
    {"host_events.op", "CREATE INDEX host_events_by_op ON host_events(op) WHERE op IS NOT NULL"},
    {"host_events.run", "CREATE INDEX host_events_by_run ON host_events(run) WHERE run IS NOT NULL"},
    {"device_events.host_event_id",
     "CREATE INDEX device_events_by_host_event ON device_events(host_event_id) WHERE host_event_id IS NOT NULL"},
};

const char* const kViews = R"SQL(
CREATE VIEW threads AS
  SELECT pid, tid, name FROM tracks WHERE kind = 'thread';
CREATE VIEW host AS
  SELECT e.id, t.pid, t.tid, c.value AS cat, n.value AS name, e.ts_ns, e.dur_ns,
         e.ts_ns + e.dur_ns AS end_ns, e.correlation_id, o.value AS op, p.value AS provider,
         e.node_index, e.run
  FROM host_events e
)SQL" EVENT_JOINS R"SQL(
  LEFT JOIN strings o ON o.id = e.op
  LEFT JOIN strings p ON p.id = e.provider;
CREATE VIEW nodes AS
  SELECT id, pid, tid,
         CASE WHEN name LIKE '%\_kernel\_time' ESCAPE '\' THEN substr(name, 1, length(name) - 12)
              ELSE name END AS node,
         op, provider, node_index, ts_ns, dur_ns, end_ns, correlation_id, run
  FROM host
  WHERE cat = 'Node' AND name NOT LIKE '%\_fence\_before' ESCAPE '\'
                     AND name NOT LIKE '%\_fence\_after' ESCAPE '\';
CREATE VIEW device AS
  SELECT e.id, t.pid, t.tid, t.name AS queue, c.value AS cat, n.value AS name, e.ts_ns, e.dur_ns,
         e.ts_ns + e.dur_ns AS end_ns, e.correlation_id, e.host_event_id, e.run
  FROM device_events e
)SQL" EVENT_JOINS R"SQL(;
CREATE VIEW event_args AS
  SELECT a.event_id, a.seq, k.value AS key, v.value AS value, a.json
  FROM args a
  JOIN strings k ON k.id = a.key
  JOIN strings v ON v.id = a.value;
CREATE VIEW counter_samples AS
  SELECT c.id, t.pid, t.tid, n.value AS name, s.value AS series, c.ts_ns, c.value
  FROM counters c
  JOIN tracks t ON t.id = c.track
  JOIN strings n ON n.id = c.name
  JOIN strings s ON s.id = c.series;
)SQL";

#undef EVENT_COLUMNS
#undef EVENT_JOINS

}  // namespace epprof::tracedb
