// The SQLite trace database end to end: `epprof run` writes one, the
// README's example queries (run through the sqlite3 shell, read from
// README.md itself) answer what `epprof report` says, `convert` keeps every
// event both ways, `merge` joins databases, and bad or failed files get
// clear errors and leave nothing behind.
#include <gtest/gtest.h>

#include <csignal>

#include <algorithm>
#include <map>
#include <set>

#include "test_util.h"

namespace epprof::report_test {
namespace {

using nlohmann::json;

bool have_sqlite3_shell() { return run_cmd("command -v sqlite3").rc == 0; }

// The README's ```sql blocks of its SQLite section, in order.
std::vector<std::string> readme_queries() {
  const std::string readme = read_file(std::string(EPPROF_SOURCE_DIR) + "/README.md");
  std::vector<std::string> out;
  size_t at = readme.find("### The SQLite trace database");
  while (at != std::string::npos) {
    at = readme.find("```sql\n", at);
    if (at == std::string::npos) break;
    const size_t end = readme.find("```", at + 7);
    if (end == std::string::npos) break;
    out.push_back(readme.substr(at + 7, end - at - 7));
    at = end + 3;
    if (readme.find("\n## ", end) < readme.find("```sql\n", at)) break;  // section over
  }
  return out;
}

// Runs `sql` on `db` through the sqlite3 shell; rows as JSON objects.
json query(const std::string& db, const std::string& sql, const std::string& dir) {
  const std::string file = dir + "/q.sql";
  write_file(file, sql);
  CmdResult r = run_cmd("sqlite3 -json '" + db + "' < '" + file + "'");
  EXPECT_EQ(r.rc, 0) << r.out;
  if (r.out.find_first_not_of(" \n") == std::string::npos) return json::array();
  return json::parse(r.out);
}

std::string make_trace(const TempDir& dir, const std::string& name, const std::string& extra = "") {
  const std::string path = dir.file(name);
  CmdResult r = run_cmd(cli() + " run --runs 3 --warmup 1 --no-table --plugin " EPPROF_EXAMPLE_PLUGIN_PATH
                        " --output " + path + " " + extra);
  EXPECT_EQ(r.rc, 0) << r.out;
  return path;
}

TEST(SqliteTrace, ReadmeQueriesAnswerWhatTheReportSays) {
  if (!have_sqlite3_shell()) GTEST_SKIP() << "the sqlite3 shell is not installed (scripts/setup.sh installs it)";
  TempDir dir;
  const std::string db = make_trace(dir, "t.db");
  EXPECT_EQ(read_file(db).compare(0, 15, "SQLite format 3"), 0);
  EXPECT_EQ(query(db, "PRAGMA user_version;", dir.path())[0]["user_version"], 1);
  EXPECT_EQ(query(db, "PRAGMA application_id;", dir.path())[0]["application_id"], 0x45505046);

  const std::vector<std::string> q = readme_queries();
  ASSERT_EQ(q.size(), 3u) << "the README's SQLite section should hold three example queries";
  CmdResult rep = run_cmd(cli() + " report " + db + " --format json");
  ASSERT_EQ(rep.rc, 0) << rep.out;
  const json report = json::parse(rep.out);

  // 1. The top ops: the report's --by op rows, same order.
  const json ops = query(db, q[0], dir.path());
  ASSERT_EQ(ops.size(), report["rows"].size());
  ASSERT_GT(ops.size(), 3u);
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i]["op"], report["rows"][i]["key"]);
    EXPECT_EQ(ops[i]["count"], report["rows"][i]["count"]);
    EXPECT_NEAR(ops[i]["total_us"].get<double>(), report["rows"][i]["total_us"].get<double>(), 0.0015);
  }

  // 2. Device time per node: the report's nodes with device work.
  const json dev = query(db, q[1], dir.path());
  std::map<std::string, json> by_node;
  for (const json& n : report["nodes"])
    if (n["device_slices"].get<int>() > 0) by_node[n["node"].get<std::string>()] = n;
  ASSERT_EQ(dev.size(), by_node.size());
  ASSERT_GT(dev.size(), 0u);
  for (const json& row : dev) {
    const json& n = by_node.at(row["node"].get<std::string>());
    EXPECT_EQ(row["op"], n["op"]);
    EXPECT_EQ(row["device_slices"], n["device_slices"]);
    EXPECT_NEAR(row["device_us"].get<double>(), n["device_us"].get<double>(), 0.0015);
  }

  // 3. The slowest measured run: from the trace converted back to JSON
  // (exact times), read with an independent parser.
  const std::string back = dir.file("back.json");
  ASSERT_EQ(run_cmd(cli() + " convert " + db + " " + back + " --timestamps fractional").rc, 0);
  std::vector<double> runs;
  for (const json& e : load_json(back))
    if (e["ph"] == "X" && e["name"] == "model_run") runs.push_back(e["dur"].get<double>());
  ASSERT_EQ(runs.size(), 4u);
  std::sort(runs.begin(), runs.end());
  const json slowest = query(db, q[2], dir.path());
  ASSERT_EQ(slowest.size(), 1u);
  // The warm-up run is left out, so the slowest measured one may be the
  // second slowest of all: it is one of the measured three.
  double measured_max = 0;
  CmdResult order = run_cmd("sqlite3 '" + db + "' 'SELECT dur_ns FROM runs WHERE measured'");
  std::istringstream in(order.out);
  for (double v; in >> v;) measured_max = std::max(measured_max, v / 1e3);
  EXPECT_NEAR(slowest[0]["dur_us"].get<double>(), measured_max, 1e-6);
  EXPECT_TRUE(std::find_if(runs.begin(), runs.end(), [&](double d) { return std::abs(d - measured_max) < 1e-6; }) !=
              runs.end());
  EXPECT_NEAR(report["model_run_total_us"].get<double>(),
              query(db, "SELECT SUM(dur_ns) / 1e3 AS t FROM runs WHERE measured;", dir.path())[0]["t"].get<double>(),
              0.0015);
}

// Every event of a JSON trace comes back from its database: the same
// fields, the same args, in the same order; metadata records (process and
// thread names, epprof_metadata), whose order means nothing, as a set.
void expect_same_events(const json& a_all, const json& b_all) {
  json a = json::array(), b = json::array();
  std::multiset<std::string> meta_a, meta_b;
  for (const json& e : a_all) e["ph"] == "M" ? (void)meta_a.insert(e.dump()) : a.push_back(e);
  for (const json& e : b_all) e["ph"] == "M" ? (void)meta_b.insert(e.dump()) : b.push_back(e);
  EXPECT_EQ(meta_a, meta_b);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    json x = a[i], y = b[i];
    for (const char* field : {"cat", "name", "ph", "pid", "tid", "id", "bp"})
      EXPECT_EQ(x.value(field, json()), y.value(field, json())) << "event " << i << " field " << field;
    for (const char* field : {"ts", "dur"}) {
      if (x.contains(field)) {
        EXPECT_NEAR(x[field].get<double>(), y[field].get<double>(), 1e-6) << "event " << i;
      }
    }
    EXPECT_EQ(x["args"], y["args"]) << "event " << i;  // objects: key order does not matter
  }
}

TEST(SqliteTrace, ConvertKeepsEveryEventBothWays) {
  TempDir dir;
  const std::string src = make_trace(dir, "t.json", "--timestamps fractional");
  const std::string db = dir.file("t.db"), back = dir.file("back.json");
  CmdResult c1 = run_cmd(cli() + " convert " + src + " " + db);
  ASSERT_EQ(c1.rc, 0) << c1.out;
  EXPECT_NE(c1.out.find("SQLite database"), std::string::npos) << c1.out;
  CmdResult c2 = run_cmd(cli() + " convert " + db + " " + back + " --timestamps fractional");
  ASSERT_EQ(c2.rc, 0) << c2.out;
  expect_same_events(load_json(src), load_json(back));
  // The reports of all three agree, and so does validate.
  const std::string r = run_cmd(cli() + " report " + src + " --format csv").out;
  EXPECT_EQ(run_cmd(cli() + " report " + db + " --format csv").out, r);
  EXPECT_EQ(run_cmd(cli() + " report " + back + " --format csv").out, r);
  CmdResult v = run_cmd(cli() + " validate " + db);
  EXPECT_EQ(v.rc, 0) << v.out;
  // diff reads a database against JSON: the same trace, no change flagged.
  CmdResult d = run_cmd(cli() + " diff " + src + " " + db + " --format csv");
  EXPECT_EQ(d.rc, 0) << d.out;
}

TEST(SqliteTrace, OnnxRuntimeProfileRoundTrips) {
  TempDir dir;
  const std::string src = std::string(EPPROF_REPORT_DATA_DIR) + "/ort_plugin_ep_profile.json";
  const std::string db = dir.file("ort.db"), back = dir.file("ort.json");
  ASSERT_EQ(run_cmd(cli() + " convert " + src + " " + db).rc, 0);
  CmdResult c = run_cmd(cli() + " convert " + db + " " + back);
  ASSERT_EQ(c.rc, 0) << c.out;
  expect_same_events(load_json(src), load_json(back));
  EXPECT_EQ(run_cmd(cli() + " report " + db + " --format csv").out,
            run_cmd(cli() + " report " + src + " --format csv").out);
}

TEST(SqliteTrace, IntegerJsonKeepsSubMicrosecondLengthsInTheDatabase) {
  TempDir dir;
  const std::string db = make_trace(dir, "t.db");
  const std::string integer = dir.file("i.json"), again = dir.file("again.db");
  ASSERT_EQ(run_cmd(cli() + " convert " + db + " " + integer).rc, 0);
  size_t short_slices = 0;
  for (const json& e : load_json(integer)) {
    if (e["ph"] != "X") continue;
    ASSERT_TRUE(e["ts"].is_number_integer() && e["dur"].is_number_integer()) << e.dump();
    if (e["args"].contains("dur_ns")) ++short_slices;
  }
  // Back into a database: the dur_ns args give the exact lengths again.
  ASSERT_EQ(run_cmd(cli() + " convert " + integer + " " + again).rc, 0);
  if (!have_sqlite3_shell()) GTEST_SKIP() << "the sqlite3 shell is not installed";
  const std::string sub = "SELECT COUNT(*) AS n FROM host_events WHERE dur_ns > 0 AND dur_ns < 1000;";
  EXPECT_EQ(query(again, sub, dir.path())[0]["n"], query(db, sub, dir.path())[0]["n"]);
  const json n = query(db, sub, dir.path())[0]["n"];
  EXPECT_LE(n.get<size_t>(), short_slices);
}

TEST(SqliteTrace, MergeJoinsDatabasesAlignedByT0) {
  TempDir dir;
  const std::string a = make_trace(dir, "a.db"), b = make_trace(dir, "b.db");
  const std::string m = dir.file("m.db");
  CmdResult r = run_cmd(cli() + " merge " + a + " " + b + " -o " + m);
  ASSERT_EQ(r.rc, 0) << r.out;
  // The same merge of the JSON forms reports alike.
  const std::string aj = dir.file("a.json"), bj = dir.file("b.json"), mj = dir.file("m.json");
  ASSERT_EQ(run_cmd(cli() + " convert " + a + " " + aj + " --timestamps fractional").rc, 0);
  ASSERT_EQ(run_cmd(cli() + " convert " + b + " " + bj + " --timestamps fractional").rc, 0);
  ASSERT_EQ(run_cmd(cli() + " merge " + aj + " " + bj + " -o " + mj).rc, 0);
  EXPECT_EQ(run_cmd(cli() + " report " + m + " --format csv").out,
            run_cmd(cli() + " report " + mj + " --format csv").out);
  CmdResult v = run_cmd(cli() + " validate " + m);
  EXPECT_EQ(v.rc, 0) << v.out;
  if (!have_sqlite3_shell()) GTEST_SKIP() << "the sqlite3 shell is not installed";
  const json procs = query(m, "SELECT pid, t0_epoch_ns FROM processes ORDER BY pid;", dir.path());
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs[0]["t0_epoch_ns"], procs[1]["t0_epoch_ns"]);  // one time base: the earliest T0
  EXPECT_EQ(query(m, "SELECT COUNT(*) AS n FROM runs;", dir.path())[0]["n"], 8);
  EXPECT_EQ(query(m, "SELECT COUNT(DISTINCT pid) AS n FROM runs;", dir.path())[0]["n"], 2);
}

bool only_file_is(const TempDir& dir, const std::set<std::string>& names) {
  CmdResult ls = run_cmd("ls -A '" + dir.path() + "'");
  std::istringstream in(ls.out);
  std::set<std::string> seen;
  for (std::string n; in >> n;) seen.insert(n);
  return seen == names;
}

TEST(SqliteTrace, FailedWriteLeavesNoDatabase) {
  TempDir dir;
  const std::string src = make_trace(dir, "t.json");
  const std::string out = dir.file("out.db");
  // A file-size limit (with SIGXFSZ ignored, so the write fails with
  // EFBIG, as a full disk gives ENOSPC) stops SQLite part way: a clear
  // error naming the output, and nothing left, not even the temporary.
  const std::string limit = "prlimit --fsize=65536 ";
  const std::string ignore = "trap '' XFSZ; ";
  CmdResult r = run_cmd(ignore + limit + cli() + " convert " + src + " " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("out.db"), std::string::npos) << r.out;
  EXPECT_TRUE(only_file_is(dir, {"t.json"})) << run_cmd("ls -A " + dir.path()).out;
  // An existing file there is left as it was.
  write_file(out, "previous");
  r = run_cmd(ignore + limit + cli() + " convert " + src + " " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(read_file(out), "previous");
  // epprof run, too.
  r = run_cmd(ignore + limit + cli() + " run --runs 2 --no-table --plugin " EPPROF_EXAMPLE_PLUGIN_PATH
              " --output " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("out.db"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_TRUE(only_file_is(dir, {"t.json", "out.db"})) << run_cmd("ls -A " + dir.path()).out;
  // Killed outright part way (SIGXFSZ's default action): the output is
  // untouched; only SQLite's hidden temporary can be left.
  r = run_cmd(limit + cli() + " convert " + src + " " + out);
  EXPECT_EQ(r.rc, 128 + SIGXFSZ) << r.out;
  EXPECT_EQ(read_file(out), "previous");
}

TEST(SqliteTrace, ForeignAndDamagedDatabasesGetClearErrors) {
  if (!have_sqlite3_shell()) GTEST_SKIP() << "the sqlite3 shell is not installed";
  TempDir dir;
  const std::string other = dir.file("other.db");
  ASSERT_EQ(run_cmd("sqlite3 '" + other + "' 'CREATE TABLE t(x); INSERT INTO t VALUES(1);'").rc, 0);
  CmdResult r = run_cmd(cli() + " report " + other);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("not an epprof trace"), std::string::npos) << r.out;

  const std::string db = make_trace(dir, "t.db");
  // A newer schema is named as such.
  const std::string newer = dir.file("newer.db");
  ASSERT_EQ(run_cmd("cp '" + db + "' '" + newer + "' && sqlite3 '" + newer + "' 'PRAGMA user_version = 7;'").rc, 0);
  r = run_cmd(cli() + " validate " + newer);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("schema version 7"), std::string::npos) << r.out;
  // Truncated: SQLite's header, then garbage.
  const std::string cut = dir.file("cut.db");
  write_file(cut, read_file(db).substr(0, 100) + std::string(3000, 'x'));
  r = run_cmd(cli() + " report " + cut);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("cut.db"), std::string::npos) << r.out;
  // Cut short at a page: SQLite reads the header, not the schema. Said so,
  // not taken for a foreign database.
  const std::string short_copy = dir.file("short.db");
  write_file(short_copy, read_file(db).substr(0, 20000));
  r = run_cmd(cli() + " report " + short_copy);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("damaged or truncated"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not an epprof trace"), std::string::npos) << r.out;
  // A string id that the strings table lacks.
  const std::string broken = dir.file("broken.db");
  ASSERT_EQ(run_cmd("cp '" + db + "' '" + broken + "' && sqlite3 '" + broken +
                    "' 'UPDATE host_events SET name = 999999 WHERE id = (SELECT MIN(id) FROM host_events);'")
                .rc,
            0);
  r = run_cmd(cli() + " report " + broken);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("string 999999"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace epprof::report_test
