// End to end: `epprof validate` (a clean trace, then one seeded violation of
// each kind), `epprof diff` and `epprof merge` on traces from `epprof run`.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "test_util.h"

namespace epprof::report_test {
namespace {

using nlohmann::json;

class ToolsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    for (const char* name : {"a.json", "b.json"}) {
      CmdResult r = run_cmd(cli() + " run --runs 4 --warmup 1 --no-table --plugin " EPPROF_EXAMPLE_PLUGIN_PATH
                            " --output " + dir_->file(name));
      ASSERT_EQ(r.rc, 0) << r.out;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
};
TempDir* ToolsCli::dir_ = nullptr;

// Index of the first event matching `pred`.
template <typename F>
size_t find_event(const json& events, F pred) {
  for (size_t i = 0; i < events.size(); ++i)
    if (pred(events[i])) return i;
  ADD_FAILURE() << "no such event";
  return 0;
}

bool is_node_kernel(const json& e) { return e["cat"] == "Kernel" && e["args"].contains("op_name"); }

TEST_F(ToolsCli, ValidateAcceptsRealTraces) {
  CmdResult r = run_cmd(cli() + " validate " + dir_->file("a.json"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("valid"), std::string::npos);
}

TEST_F(ToolsCli, ValidateFindsEachSeededViolation) {
  const json base = load_json(dir_->file("a.json"));
  struct Seed {
    const char* kind;
    std::function<void(json&)> mutate;
  };
  const std::vector<Seed> seeds = {
      {"required-field", [](json& ev) { ev[find_event(ev, [](const json& e) { return e["cat"] == "Node"; })].erase("ts"); }},
      {"negative-duration", [](json& ev) { ev[find_event(ev, [](const json& e) { return e["cat"] == "Node"; })]["dur"] = -1.0; }},
      {"correlation", [](json& ev) { ev[find_event(ev, is_node_kernel)]["args"]["correlation_id"] = "987654321"; }},
      {"attribution", [](json& ev) { ev[find_event(ev, is_node_kernel)]["args"]["op_name"] = "NotTheOp"; }},
      {"attribution", [](json& ev) { ev[find_event(ev, is_node_kernel)]["args"]["node_index"] = "999"; }},
      {"attribution", [](json& ev) { ev[find_event(ev, is_node_kernel)]["args"]["parent_name"] = "other"; }},
      {"track-order", [](json& ev) {
         // Two consecutive nodes of one thread, swapped: the first now ends
         // after the second (events are written by end time).
         size_t a = find_event(ev, [](const json& e) { return e["cat"] == "Node"; });
         size_t b = a + 1;
         while (b < ev.size() && !(ev[b]["cat"] == "Node" && ev[b]["tid"] == ev[a]["tid"])) ++b;
         std::swap(ev[a], ev[b]);
       }},
      {"nesting", [](json& ev) {
         size_t i = find_event(ev, [](const json& e) { return e["cat"] == "Node"; });
         ev[i]["dur"] = ev[i]["dur"].get<double>() + 1e7;  // runs past the end of its model_run
       }},
      {"flow", [](json& ev) { ev.erase(find_event(ev, [](const json& e) { return e["ph"] == "f"; })); }},
      {"json", [](json&) {}},
  };
  TempDir dir;
  for (const Seed& s : seeds) {
    json ev = base;
    s.mutate(ev);
    std::string text = ev.dump();
    if (std::string(s.kind) == "json") text = text.substr(0, text.size() / 2);
    const std::string path = dir.file("bad.json");
    write_file(path, text);
    CmdResult r = run_cmd(cli() + " validate " + path);
    EXPECT_EQ(r.rc, 1) << s.kind << "\n" << r.out;
    EXPECT_NE(r.out.find(std::string(s.kind) + ": "), std::string::npos) << s.kind << "\n" << r.out;
  }
}

// ONNX Runtime plugin-EP GPU events (ort_* args): each way one can be wrong.
TEST_F(ToolsCli, ValidateChecksOnnxRuntimePluginEpGpuEvents) {
  const json base = load_json(std::string(EPPROF_REPORT_DATA_DIR) + "/ort_plugin_ep_profile.json");
  auto named_kernel = [](const json& e) { return e["cat"] == "Kernel" && e["args"].contains("ort_event_name"); };
  struct Seed {
    const char* kind;
    const char* says;
    std::function<void(json&)> mutate;
  };
  const std::vector<Seed> seeds = {
      {"attribution", "but node event", [&](json& ev) { ev[find_event(ev, named_kernel)]["args"]["ort_op_name"] = "Conv"; }},
      {"attribution", "resolves to no node event",
       [&](json& ev) { ev[find_event(ev, named_kernel)]["args"]["ort_node_index"] = "7"; }},
      {"attribution", "resolves to no node event",
       [&](json& ev) { ev[find_event(ev, named_kernel)]["args"]["ort_event_name"] = "Gone_kernel_time"; }},
      {"attribution", "resolves to no node event",  // launched before its node started
       [&](json& ev) { ev[find_event(ev, named_kernel)]["ts"] = 100; }},
      {"attribution", "come as a group", [&](json& ev) { ev[find_event(ev, named_kernel)]["args"].erase("ort_op_name"); }},
      {"correlation", "is not an integer",
       [&](json& ev) { ev[find_event(ev, named_kernel)]["args"]["ort_correlation_id"] = "seventeen"; }},
      {"correlation", "without an ort_correlation_id",
       [&](json& ev) { ev[find_event(ev, named_kernel)]["args"].erase("ort_correlation_id"); }},
  };
  TempDir dir;
  for (const Seed& s : seeds) {
    json ev = base;
    s.mutate(ev);
    const std::string path = dir.file("ort_bad.json");
    write_file(path, ev.dump());
    CmdResult r = run_cmd(cli() + " validate " + path);
    EXPECT_EQ(r.rc, 1) << s.says << "\n" << r.out;
    EXPECT_NE(r.out.find(std::string(s.kind) + ": "), std::string::npos) << s.says << "\n" << r.out;
    EXPECT_NE(r.out.find(s.says), std::string::npos) << r.out;
  }
}

TEST_F(ToolsCli, DiffOfATraceWithItselfIsZero) {
  CmdResult r = run_cmd(cli() + " diff " + dir_->file("a.json") + " " + dir_->file("a.json") + " --format json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json d = json::parse(r.out);
  ASSERT_FALSE(d["op"].empty());
  for (const char* table : {"op", "node"})
    for (const json& row : d[table]) {
      EXPECT_EQ(row["delta_us"].get<double>(), 0.0);
      EXPECT_EQ(row["significant"], false);
    }
}

TEST_F(ToolsCli, DiffFlagsAnOpMadeSlower) {
  // A: the recorded trace with every MaxPool node 100 us long, so that the
  // op's runs do not vary (a run preempted inside a MaxPool on a loaded
  // machine would otherwise make its noise, not the code, decide the
  // verdict). B: every MaxPool node 5 ms longer; nothing else changes.
  json ev = load_json(dir_->file("a.json"));
  auto set_pools = [&](double dur_us) {
    for (json& e : ev)
      if (e["cat"] == "Node" && e["args"]["op_name"] == "MaxPool") {
        e["args"].erase("dur_ns");  // the exact length of a slice under 1 us; fractional "dur" says it
        e["dur"] = dur_us;
      }
  };
  TempDir dir;
  set_pools(100.0);
  save_json(dir.file("base.json"), ev);
  set_pools(5100.0);
  save_json(dir.file("slow.json"), ev);
  CmdResult r = run_cmd(cli() + " diff " + dir.file("base.json") + " " + dir.file("slow.json") + " --format json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json d = json::parse(r.out);
  ASSERT_FALSE(d["op"].empty());
  const json& top = d["op"][0];
  EXPECT_EQ(top["key"], "MaxPool");
  size_t pools = 0;  // MaxPool nodes per run
  std::set<std::string> names;
  for (const json& e : ev)
    if (e["cat"] == "Node" && e["args"]["op_name"] == "MaxPool") names.insert(e["name"]);
  pools = names.size();
  ASSERT_GT(pools, 0u);
  EXPECT_NEAR(top["delta_us"].get<double>(), 5000.0 * double(pools), 0.01);
  EXPECT_EQ(top["significant"], true);
  for (size_t i = 1; i < d["op"].size(); ++i) EXPECT_EQ(d["op"][i]["delta_us"].get<double>(), 0.0);
  // Text output: sorted by absolute change, MaxPool first.
  CmdResult t = run_cmd(cli() + " diff " + dir.file("base.json") + " " + dir.file("slow.json") + " --by op");
  ASSERT_EQ(t.rc, 0) << t.out;
  EXPECT_LT(t.out.find("MaxPool"), t.out.find("Conv")) << t.out;
}

TEST_F(ToolsCli, MergeAlignsByT0AndKeepsProcessesApart) {
  TempDir dir;
  const std::string out = dir.file("m.json");
  const std::string a = dir_->file("a.json"), b = dir_->file("b.json");
  // b twice: its pid and process name clash with itself.
  CmdResult r = run_cmd(cli() + " merge " + a + " " + b + " " + b + " -o " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  const json ja = load_json(a), jb = load_json(b), jm = load_json(out);
  auto t0 = [](const json& ev) {
    for (const json& e : ev)
      if (e["name"] == "epprof_metadata") return as_int(e["args"]["t0_epoch_ns"]);
    return 0LL;
  };
  const long long base = std::min(t0(ja), t0(jb));
  std::map<long long, std::vector<const json*>> by_pid;
  std::map<long long, std::string> names;
  for (const json& e : jm) {
    by_pid[e["pid"].get<long long>()].push_back(&e);
    if (e["name"] == "process_name") names[e["pid"].get<long long>()] = e["args"]["name"];
  }
  ASSERT_EQ(by_pid.size(), 3u) << "three processes, three pids";
  std::set<std::string> distinct;
  for (const auto& [pid, n] : names) distinct.insert(n);
  EXPECT_EQ(distinct.size(), 3u) << "process names kept distinct";
  // Every event of each input is there, shifted by its T0 offset.
  EXPECT_EQ(jm.size(), ja.size() + 2 * jb.size());
  const long long pid_a = ja[0]["pid"];
  const double off_a = double(t0(ja) - base) / 1000.0;
  size_t checked = 0;
  for (size_t i = 0; i < ja.size(); ++i) {
    if (ja[i]["ph"] != "X") continue;
    const json* m = by_pid[pid_a][i];
    EXPECT_EQ((*m)["name"], ja[i]["name"]);
    EXPECT_NEAR((*m)["ts"].get<double>(), ja[i]["ts"].get<double>() + off_a, 0.002);
    ++checked;
  }
  EXPECT_GT(checked, 0u);
  const double off_b = double(t0(jb) - base) / 1000.0;
  for (const auto& [pid, evs] : by_pid) {
    if (pid == pid_a) continue;
    ASSERT_EQ(evs.size(), jb.size());
    for (size_t i = 0; i < jb.size(); ++i)
      if (jb[i]["ph"] == "X") {
        EXPECT_NEAR((*evs[i])["ts"].get<double>(), jb[i]["ts"].get<double>() + off_b, 0.002);
      }
  }
  // The merged trace is itself valid, with flow ids still paired.
  CmdResult v = run_cmd(cli() + " validate " + out);
  EXPECT_EQ(v.rc, 0) << v.out;
  // An input without T0 is refused.
  write_file(dir.file("ort.json"), read_file(std::string(EPPROF_REPORT_DATA_DIR) + "/ort_profile.json"));
  CmdResult bad = run_cmd(cli() + " merge " + a + " " + dir.file("ort.json") + " -o " + dir.file("x.json"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("t0_epoch_ns"), std::string::npos) << bad.out;
  EXPECT_EQ(run_cmd("test -e " + dir.file("x.json")).rc, 1) << "no partial output";
}

}  // namespace
}  // namespace epprof::report_test
