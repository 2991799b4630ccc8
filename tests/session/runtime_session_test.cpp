// Sessions fed by the reference runtime (epprof::rt::ProfilingObserver with
// ProfilingOptions::sessions):
// dispatch counting with software counters on a bundled model, every replay
// mode against a single pass, outputs unchanged, counters in the trace, and
// multi-pass planning driven by the fake 4-counter PMU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "epprof/epprof.h"
#include "epprof/rt/profiling.h"
#include "epprof/rt/session.h"
#include "support/test_util.h"

namespace epprof::testing {
namespace {

using rt::DataType;
using rt::Tensor;

std::string model_path(const std::string& name) { return std::string(EPPROF_MODELS_DIR) + "/" + name + ".onnx"; }

// The runtime's observer feeding sessions only: no trace of its own.
rt::ProfilingOptions sessions_only() {
  rt::ProfilingOptions po;
  po.sessions = true;
  return po;
}

std::map<std::string, Tensor> inputs_for(const rt::Session& s) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::map<std::string, Tensor> in;
  for (const auto& info : s.inputs()) {
    rt::Shape shape = info.shape;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    Tensor t(DataType::Float, shape);
    float* p = t.mutable_data<float>();
    for (int64_t i = 0; i < t.size(); ++i) p[i] = dist(rng);
    in[info.name] = t;
  }
  return in;
}

bool bit_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].shape() != b[i].shape() || a[i].byte_size() != b[i].byte_size() ||
        std::memcmp(a[i].raw(), b[i].raw(), a[i].byte_size()) != 0)
      return false;
  return true;
}

// A counter configuration; MULTIPASS is accepted (and remembered).
struct Config {
  epprof_counter_config_t handle{0};
  uint32_t passes = 0;
  Config(const char* device, std::vector<const char*> names) {
    epprof_status* st = epprof_counter_config_create(device, names.data(), names.size(), &handle);
    const auto r = take(st);
    EXPECT_TRUE(r.code == EPPROF_OK || r.code == EPPROF_MULTIPASS) << r.message;
    epprof_status_release(epprof_counter_config_pass_count(handle, &passes));
  }
  ~Config() { epprof_status_release(epprof_counter_config_destroy(handle)); }
};

// The tool: asks every dispatch for `config`, keeps every counter value
// delivered, keyed by (node index, run id, counter name).
struct Tool {
  epprof_counter_config_t config{0};
  std::mutex mu;
  std::map<std::tuple<uint32_t, uint64_t, std::string>, epprof_record> values;
  std::map<uint32_t, int> dispatches;  // per node index
  uint64_t records = 0;

  static epprof_status* dispatch(void* u, epprof_session_t, const epprof_dispatch_info*,
                                 epprof_counter_config_t* config) {
    *config = static_cast<Tool*>(u)->config;
    return nullptr;
  }
  static epprof_status* record(void* u, epprof_session_t, const epprof_dispatch_info* info,
                               const epprof_record* rs, size_t n) {
    auto* t = static_cast<Tool*>(u);
    std::lock_guard<std::mutex> lock(t->mu);
    ++t->dispatches[info->node_index];
    for (size_t i = 0; i < n; ++i) {
      t->values[{rs[i].node_index, rs[i].run_id, epprof_name(rs[i].name)}] = rs[i];
      ++t->records;
    }
    return nullptr;
  }
  // The value of `counter` per node index, for run `run` (0: any, the last).
  std::map<uint32_t, epprof_record> of(const std::string& counter) {
    std::map<uint32_t, epprof_record> out;
    for (const auto& kv : values)
      if (std::get<2>(kv.first) == counter) out[std::get<0>(kv.first)] = kv.second;
    return out;
  }
};

struct Session {
  epprof_session_t s{0};
  Session(Tool& tool, epprof_replay_mode mode) {
    epprof_session_config cfg{};
    cfg.size = sizeof cfg;
    cfg.record_size = sizeof(epprof_record);
    cfg.replay_mode = mode;
    cfg.callback = [](void*, epprof_session_t, const epprof_record*, size_t, uint64_t) -> epprof_status* {
      return nullptr;
    };
    cfg.dispatch_callback = &Tool::dispatch;
    cfg.dispatch_user_data = &tool;
    cfg.counter_record_callback = &Tool::record;
    cfg.counter_record_user_data = &tool;
    auto r = take(epprof_session_create(&cfg, &s));
    EXPECT_EQ(r.code, EPPROF_OK) << r.message;
    EXPECT_EQ(take(epprof_session_start(s)).code, EPPROF_OK);
  }
  ~Session() { epprof_status_release(epprof_session_destroy(s)); }
};

class RuntimeSessions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { EPPROF_ASSERT_OK(epprof_counter_register_fake_device()); }
};

// The observer asks for something to do, and without a trace it has
// nothing to write.
TEST_F(RuntimeSessions, AnObserverWithoutATraceFeedsSessionsOnly) {
  EXPECT_THROW(rt::ProfilingObserver(rt::ProfilingOptions{}), rt::Error);
  try {
    rt::ProfilingObserver none{rt::ProfilingOptions{}};
  } catch (const rt::Error& e) {
    EXPECT_EQ(e.kind(), rt::ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("neither a trace_path nor sessions"), std::string::npos) << e.what();
  }
  rt::ProfilingObserver obs(sessions_only());
  EXPECT_EQ(obs.profiler().handle, 0u);
  EXPECT_TRUE(obs.may_replay_kernels());
  const epprof_trace_stats stats = obs.finish();
  EXPECT_EQ(stats.host_events, 0u);
}

TEST_F(RuntimeSessions, SoftwareCountersOnABundledModel) {
  Config cfg("cpu", {"task-clock", "page-faults", "context-switches", "flops", "bytes", "duration_ns"});
  ASSERT_EQ(cfg.passes, 1u);
  Tool tool;
  tool.config = cfg.handle;
  rt::ProfilingObserver obs(sessions_only());
  rt::SessionOptions so;
  so.observer = &obs;
  rt::Session model(model_path("mlp"), so);
  Session s(tool, EPPROF_REPLAY_KERNEL);
  model.run(inputs_for(model));
  EXPECT_EQ(obs.session_errors(), 0u);
  ASSERT_EQ(tool.dispatches.size(), model.nodes().size());
  auto task_clock = tool.of("task-clock");
  auto flops = tool.of("flops");
  auto duration = tool.of("duration_ns");
  ASSERT_EQ(task_clock.size(), model.nodes().size());
  bool some_flops = false;
  for (const auto& node : model.nodes()) {
    const uint32_t i = uint32_t(node.index);
    SCOPED_TRACE(node.name);
    EXPECT_TRUE(task_clock[i].counter_flags & EPPROF_COUNTER_VALUE_VALID);
    EXPECT_GE(task_clock[i].value, 0.0);
    EXPECT_TRUE(duration[i].counter_flags & EPPROF_COUNTER_VALUE_VALID);
    EXPECT_EQ(duration[i].value, double(duration[i].dur_ns));  // the first execution's wall time
    EXPECT_EQ(epprof_name(task_clock[i].op_type), node.op_type);
    if (node.op_type == "Gemm" || node.op_type == "MatMul") {
      EXPECT_GT(flops[i].value, 0.0);
      some_flops = true;
    }
  }
  EXPECT_TRUE(some_flops) << "the MLP has no MatMul/Gemm node";
  EXPECT_EQ(obs.dispatches_counted(), model.nodes().size());
}

// The per-node values every replay mode must reproduce: one pass of the
// deterministic counters (cost model and fake PMU), no replay.
struct Baseline {
  std::map<uint32_t, epprof_record> flops, bytes;
  std::vector<Tensor> outputs;
};

const std::vector<const char*> kFakeMulti = {"cache-references", "cache-misses", "branch-instructions",
                                             "branch-misses",    "l1d-loads",    "l1d-load-misses",
                                             "cycles",           "flops",        "bytes"};

class ReplayModes : public RuntimeSessions, public ::testing::WithParamInterface<epprof_replay_mode> {};

TEST_P(ReplayModes, GiveTheSinglePassValuesAndLeaveOutputsUnchanged) {
  const epprof_replay_mode mode = GetParam();
  rt::ProfilingObserver obs(sessions_only());
  rt::SessionOptions so;
  so.observer = &obs;
  rt::Session model(model_path("cnn"), so);
  const auto in = inputs_for(model);
  const std::vector<Tensor> plain = model.run(in);  // no session active

  // Single pass: each fake counter in a one-pass configuration of its own.
  std::map<std::string, std::map<uint32_t, epprof_record>> single;
  for (const char* name : kFakeMulti) {
    Config one("fake-pmu", {name});
    ASSERT_EQ(one.passes, 1u) << name;
    Tool tool;
    tool.config = one.handle;
    Session s(tool, EPPROF_REPLAY_KERNEL);
    EXPECT_TRUE(bit_equal(model.run(in), plain));
    single[name] = tool.of(name);
    ASSERT_EQ(single[name].size(), model.nodes().size()) << name;
  }

  Config multi("fake-pmu", kFakeMulti);
  ASSERT_GT(multi.passes, 1u) << "6 programmable counters on a 4-counter PMU need two passes";
  Tool tool;
  tool.config = multi.handle;
  {
    Session s(tool, mode);
    if (mode == EPPROF_REPLAY_APPLICATION || mode == EPPROF_REPLAY_USER) {
      // One whole run per pass (APPLICATION), or a range of one run per pass (USER).
      for (uint32_t p = 0; p < multi.passes; ++p) {
        EPPROF_ASSERT_OK(epprof_session_begin_pass(s.s, p));
        EXPECT_TRUE(bit_equal(model.run(in), plain));
        EPPROF_ASSERT_OK(epprof_session_end_pass(s.s));
      }
      if (mode == EPPROF_REPLAY_USER) {
        EXPECT_TRUE(bit_equal(model.run(in), plain));  // outside a range: no counters
      }
    } else {
      EXPECT_TRUE(bit_equal(model.run(in), plain));
    }
  }
  EXPECT_EQ(obs.session_errors(), 0u);
  // Join the passes per node (APPLICATION/USER: each counter is valid in one
  // run's records), then compare with the single-pass values.
  for (const char* name : kFakeMulti) {
    SCOPED_TRACE(name);
    std::map<uint32_t, epprof_record> joined;
    for (const auto& kv : tool.values) {
      if (std::get<2>(kv.first) != name) continue;
      if (kv.second.counter_flags & EPPROF_COUNTER_VALUE_VALID) joined[std::get<0>(kv.first)] = kv.second;
    }
    ASSERT_EQ(joined.size(), model.nodes().size());
    for (const auto& [node, rec] : joined) {
      EXPECT_EQ(rec.value, single[name][node].value) << "node " << node;
      if (mode == EPPROF_REPLAY_NONE && std::string(name) != "flops" && std::string(name) != "bytes") {
        EXPECT_TRUE(rec.counter_flags & EPPROF_COUNTER_VALUE_SCALED);
        EXPECT_LT(rec.time_running_ns, rec.time_enabled_ns);
      }
    }
  }
}

std::string mode_name(const ::testing::TestParamInfo<epprof_replay_mode>& info) {
  static const char* const kNames[] = {"none", "kernel", "application", "user"};
  return kNames[info.param];
}

INSTANTIATE_TEST_SUITE_P(All, ReplayModes,
                         ::testing::Values(EPPROF_REPLAY_KERNEL, EPPROF_REPLAY_APPLICATION, EPPROF_REPLAY_USER,
                                           EPPROF_REPLAY_NONE),
                         mode_name);

// Kernel replay: the node's own event holds the counters of every pass;
// each replay is an event of its own ("<node>_replay", replay_pass,
// replay_of), under its own correlation id, which the EP profilers get in
// start_event/stop_event: the device work a replay issues is attributed to
// the replay, never to the run or to nothing. The example EP profiler makes
// one device "kernel" per host event it is told of, so each replay must
// have one.
TEST_F(RuntimeSessions, KernelReplaysAreEventsOfTheirOwnAndTheirDeviceWorkIsAttributedToThem) {
  TempDir dir;
  const std::string path = dir.file("trace.json");
  Config multi("fake-pmu", kFakeMulti);
  ASSERT_GT(multi.passes, 1u);
  Tool tool;
  tool.config = multi.handle;
  size_t nodes = 0;
  epprof_plugin_t plugin{};
  EPPROF_ASSERT_OK(epprof_plugin_load(EPPROF_EXAMPLE_PLUGIN_PATH, &plugin));
  {
    rt::ProfilingOptions po;
    po.trace_path = path;
    po.plugins = {plugin};
    po.sessions = true;
    rt::ProfilingObserver prof(po);
    rt::SessionOptions so;
    so.observer = &prof;
    rt::Session model(model_path("mlp"), so);
    nodes = model.nodes().size();
    Session s(tool, EPPROF_REPLAY_KERNEL);
    model.run(inputs_for(model));
    model.run(inputs_for(model));
    prof.finish();
  }
  epprof_status_release(epprof_plugin_unload(plugin));
  const auto events = read_trace(path);
  std::map<std::string, const TraceEvent*> by_corr;  // host events by correlation id
  std::vector<const TraceEvent*> node_events, replays, kernels;
  size_t counter_samples = 0;
  for (const auto& e : events) {
    if (e.cat == "Node" && e.ph == "X") (e.has_arg("replay_pass") ? replays : node_events).push_back(&e);
    if ((e.cat == "Node" || e.cat == "Session") && e.has_arg("correlation_id")) by_corr[e.arg("correlation_id")] = &e;
    if (e.cat == "Kernel") kernels.push_back(&e);
    if (e.ph == "C") ++counter_samples;
  }
  ASSERT_EQ(node_events.size(), 2 * nodes);
  const auto cycles = tool.of("cycles");
  for (const TraceEvent* e : node_events) {
    EXPECT_TRUE(e->has_arg("cycles")) << e->name;
    EXPECT_TRUE(e->has_arg("l1d-load-misses")) << e->name;  // counted in the replayed pass
    EXPECT_TRUE(e->has_arg("flops")) << e->name;
    const uint32_t index = uint32_t(std::stoul(e->arg("node_index")));
    EXPECT_EQ(e->arg("cycles"), std::to_string(int64_t(cycles.at(index).value)));
  }
  EXPECT_EQ(counter_samples, 2 * nodes * kFakeMulti.size());

  // Every node execution was replayed passes − 1 times.
  ASSERT_EQ(replays.size(), 2 * nodes * (multi.passes - 1));
  std::set<std::string> replay_ids;
  for (const TraceEvent* r : replays) {
    SCOPED_TRACE(r->name);
    ASSERT_TRUE(r->has_arg("correlation_id"));
    EXPECT_TRUE(replay_ids.insert(r->arg("correlation_id")).second) << "two replays share an id";
    const auto of = by_corr.find(r->arg("replay_of"));
    ASSERT_NE(of, by_corr.end()) << "replay_of names no host event";
    EXPECT_FALSE(of->second->has_arg("replay_pass")) << "a replay of a replay";
    EXPECT_EQ(r->name, of->second->name.substr(0, of->second->name.rfind("_kernel_time")) + "_replay");
    EXPECT_EQ(r->arg("op_name"), of->second->arg("op_name"));
    EXPECT_GE(r->ts, of->second->ts + of->second->dur - 1.0) << "the replay starts before its node ended";
  }
  // The EP profiler's device work: one kernel per host event (runs and
  // session phases too), each attributed to its own host event: one per
  // node event and one per replay.
  size_t on_nodes = 0, on_replays = 0;
  for (const TraceEvent* k : kernels) {
    ASSERT_TRUE(k->has_arg("correlation_id")) << k->name << " is unattributed";
    const auto host = by_corr.find(k->arg("correlation_id"));
    ASSERT_NE(host, by_corr.end());
    EXPECT_EQ(k->arg("parent_name"), host->second->name);
    on_nodes += host->second->cat == "Node";
    on_replays += replay_ids.count(k->arg("correlation_id"));
  }
  EXPECT_EQ(on_nodes, node_events.size() + replays.size());
  EXPECT_EQ(on_replays, replays.size());
}

TEST_F(RuntimeSessions, SessionStartedAfterWarmupSeesOnlyLaterRuns) {
  struct Nodes {
    std::mutex mu;
    std::vector<epprof_record> recs;
    static epprof_status* cb(void* u, epprof_session_t, const epprof_record* r, size_t n, uint64_t) {
      auto* self = static_cast<Nodes*>(u);
      std::lock_guard<std::mutex> lock(self->mu);
      self->recs.insert(self->recs.end(), r, r + n);
      return nullptr;
    }
  } got;
  rt::ProfilingObserver obs(sessions_only());
  rt::SessionOptions so;
  so.observer = &obs;
  rt::Session model(model_path("mlp"), so);
  const auto in = inputs_for(model);
  model.run(in);  // warm-up: run 1
  model.run(in);  // run 2
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.callback = &Nodes::cb;
  cfg.callback_user_data = &got;
  epprof_session_t s{};
  EPPROF_ASSERT_OK(epprof_session_create(&cfg, &s));
  EPPROF_ASSERT_OK(epprof_session_start(s));
  model.run(in);  // run 3
  EPPROF_ASSERT_OK(epprof_session_stop(s));
  model.run(in);  // run 4: after stop
  EPPROF_ASSERT_OK(epprof_session_destroy(s));
  size_t node_records = 0, run_records = 0;
  for (const auto& r : got.recs) {
    EXPECT_EQ(r.run_id, 3u) << epprof_name(r.name);
    node_records += r.category == EPPROF_CATEGORY_NODE;
    if (r.category != EPPROF_CATEGORY_SESSION) continue;
    ++run_records;
    EXPECT_STREQ(epprof_name(r.name), "model_run");
    EXPECT_GT(r.dur_ns, 0);
  }
  EXPECT_EQ(node_records, model.nodes().size());
  EXPECT_EQ(run_records, 1u);
}

}  // namespace
}  // namespace epprof::testing
