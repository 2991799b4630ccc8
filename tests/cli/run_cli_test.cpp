// End-to-end tests of `epprof run`: the binary is run as a user would run
// it, and the traces it writes are read back with simdjson (a parser
// independent of epprof's writer) and checked for what issue 3 and issue 4
// promise: ONNX Runtime's events, every device event attributed to the node
// that caused it, flows, per-scope traces, clear errors on bad input.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "epprof/rt/blas.h"
#include "epprof/rt/tensor_io.h"
#include "support/test_util.h"
#include "test_models.h"

namespace {

using epprof::testing::TempDir;
using epprof::testing::TraceEvent;
namespace rtt = epprof::rt::testing;

const std::string kModels = EPPROF_MODELS_DIR;

using Result = epprof::testing::ShellResult;

using epprof::testing::shell_quote;

// Runs `epprof COMMAND ARGS...`.
Result epprof_cmd(const std::string& command, const std::vector<std::string>& args) {
  std::string cmd = shell_quote(EPPROF_CLI_PATH) + " " + command;
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return epprof::testing::run_shell(cmd);
}

// Runs `epprof run ARGS...`.
Result epprof(const std::vector<std::string>& args) { return epprof_cmd("run", args); }

std::vector<TraceEvent> events_of(const std::vector<TraceEvent>& trace, const std::string& cat,
                                  const std::string& ph = "X") {
  std::vector<TraceEvent> out;
  for (const auto& e : trace)
    if (e.cat == cat && e.ph == ph) out.push_back(e);
  return out;
}

const TraceEvent* metadata(const std::vector<TraceEvent>& trace) {
  for (const auto& e : trace)
    if (e.name == "epprof_metadata") return &e;
  return nullptr;
}

// The largest clock error bound any plugin recorded, in microseconds.
double error_bound_us(const TraceEvent& meta) {
  simdjson::dom::parser parser;
  simdjson::dom::element args;
  if (parser.parse(meta.args_json).get(args)) return 0;
  simdjson::dom::object plugins;
  if (args["plugins"].get(plugins)) return 0;
  double bound_ns = 0;
  for (auto plugin : plugins) {
    std::string_view v;
    if (plugin.value["clock_error_bound_ns"].get(v) == simdjson::SUCCESS) bound_ns = std::max(bound_ns, std::stod(std::string(v)));
  }
  return bound_ns / 1000.0;
}

struct AttributionCounts {
  size_t kernels = 0, memcpys = 0;
};

// Every Kernel/Memcpy event carries a correlation id that resolves to a Node
// event of this trace with the same op_name, node_index and parent_name, and
// a flow starts inside that node slice and ends at the device slice. With
// `contained`, each device interval lies within its node's interval widened
// by the recorded clock error bound (synchronous dispatch).
AttributionCounts check_attribution(const std::vector<TraceEvent>& trace, bool contained) {
  std::map<std::string, const TraceEvent*> nodes;
  for (const auto& e : trace)
    if (e.cat == "Node" && e.ph == "X") nodes[e.arg("correlation_id")] = &e;

  std::map<uint64_t, const TraceEvent*> flow_start;
  // (tid, ts in ns) -> flow ids: two device slices of one track may start
  // in the same nanosecond (the parallel executor's copies on PoCL), and a
  // flow's end binds to a slice by its track and start alone.
  std::multimap<std::pair<int64_t, int64_t>, uint64_t> flow_end;
  for (const auto& e : trace) {
    if (e.cat != "Flow") continue;
    if (e.ph == "s") flow_start[e.flow_id] = &e;
    if (e.ph == "f") flow_end.emplace(std::make_pair(e.tid, std::llround(e.ts * 1000)), e.flow_id);
  }
  const TraceEvent* meta = metadata(trace);
  EXPECT_NE(meta, nullptr) << "no epprof_metadata record";
  const double slack_us = meta ? error_bound_us(*meta) + 0.002 : 0.002;
  if (meta) {
    EXPECT_EQ(meta->arg("unattributed_device_events"), "0");
  }

  AttributionCounts counts;
  for (const auto& d : trace) {
    if ((d.cat != "Kernel" && d.cat != "Memcpy") || d.ph != "X") continue;
    (d.cat == "Kernel" ? counts.kernels : counts.memcpys)++;
    SCOPED_TRACE(d.cat + " " + d.name + " correlation_id " + d.arg("correlation_id"));
    auto it = nodes.find(d.arg("correlation_id"));
    if (it == nodes.end()) {
      ADD_FAILURE() << "device event without a node of this trace";
      continue;
    }
    const TraceEvent& node = *it->second;
    EXPECT_EQ(d.arg("op_name"), node.arg("op_name"));
    EXPECT_EQ(d.arg("node_index"), node.arg("node_index"));
    EXPECT_EQ(d.arg("parent_name"), node.name);

    // One of the flows that end where the device slice starts comes from
    // inside its node's slice, on the node's thread.
    const auto ends = flow_end.equal_range({d.tid, std::llround(d.ts * 1000)});
    bool from_node = false;
    for (auto f = ends.first; f != ends.second; ++f) {
      auto s = flow_start.find(f->second);
      if (s != flow_start.end() && s->second->tid == node.tid && s->second->ts >= node.ts - 0.001 &&
          s->second->ts <= node.ts + node.dur + 0.001)
        from_node = true;
    }
    EXPECT_TRUE(from_node) << "no flow from its node's slice (" << std::distance(ends.first, ends.second)
                           << " flows end at the device slice)";

    if (contained) {
      EXPECT_GE(d.ts, node.ts - slack_us) << "device work starts before its node";
      EXPECT_LE(d.ts + d.dur, node.ts + node.dur + slack_us) << "device work ends after its node";
    }
  }
  return counts;
}

size_t count_named(const std::vector<TraceEvent>& trace, const std::string& name) {
  size_t n = 0;
  for (const auto& e : trace) n += e.name == name && e.ph == "X";
  return n;
}

// ---- the main job on the CPU EP ----

TEST(RunCli, DefaultRunProfilesTheBundledCnnTheWayOnnxRuntimeReports) {
  TempDir dir;
  const std::string trace_path = dir.file("cnn.json");
  Result r = epprof({"--runs", "3", "--warmup", "1", "--output", trace_path});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Conv"), std::string::npos) << "no per-op table:\n" << r.output;
  EXPECT_NE(r.output.find(trace_path), std::string::npos);

  const auto trace = epprof::testing::read_trace(trace_path);
  EXPECT_EQ(count_named(trace, "model_loading_uri"), 1u);
  EXPECT_EQ(count_named(trace, "session_initialization"), 1u);
  EXPECT_EQ(count_named(trace, "model_run"), 4u);
  EXPECT_EQ(count_named(trace, "SequentialExecutor::Execute"), 4u);

  // One NODE event per node per run, each with ONNX Runtime's args.
  const auto nodes = events_of(trace, "Node");
  ASSERT_FALSE(nodes.empty());
  std::set<std::string> node_names;
  for (const auto& n : nodes) {
    node_names.insert(n.name);
    EXPECT_EQ(n.name.size() > 12 && n.name.compare(n.name.size() - 12, 12, "_kernel_time") == 0, true) << n.name;
    for (const char* key : {"op_name", "provider", "node_index", "activation_size", "parameter_size", "output_size"})
      EXPECT_TRUE(n.has_arg(key)) << n.name << " lacks " << key;
    EXPECT_NE(n.args_json.find("\"input_type_shape\":[{\"float\":["), std::string::npos) << n.args_json;
    EXPECT_EQ(n.arg("provider"), "CPUExecutionProvider");
  }
  EXPECT_EQ(nodes.size(), 4 * node_names.size());
  EXPECT_NE(r.output.find("(" + std::to_string(node_names.size()) + " nodes"), std::string::npos) << r.output;
}

TEST(RunCli, NoProfileWritesNoTrace) {
  TempDir dir;
  Result r = epprof({kModels + "/mlp.onnx", "--runs", "2", "--no-profile", "--output", dir.file("t.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.json")));
}

TEST(RunCli, ParallelExecutorWithSessionAndRunProfilingWritesOneTracePerScope) {
  TempDir dir;
  const std::string trace_path = dir.file("tf.json");
  Result r = epprof({kModels + "/transformer.onnx", "--executor", "parallel", "--threads", "2", "--runs", "2",
                     "--warmup", "0", "--run-profiling", "--output", trace_path});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto session = epprof::testing::read_trace(trace_path);
  EXPECT_EQ(count_named(session, "model_run"), 2u);
  EXPECT_EQ(count_named(session, "ParallelExecutor::Execute"), 2u);
  const size_t session_nodes = events_of(session, "Node").size();
  size_t run_nodes = 0;
  for (int run = 1; run <= 2; ++run) {
    const auto trace = epprof::testing::read_trace(dir.file("tf.run" + std::to_string(run) + ".json"));
    EXPECT_EQ(count_named(trace, "model_run"), 1u) << "run " << run;
    EXPECT_EQ(count_named(trace, "model_loading_uri"), 0u) << "run " << run;
    run_nodes += events_of(trace, "Node").size();
  }
  EXPECT_EQ(run_nodes, session_nodes);
}

// ---- the OpenCL EP: device work attributed to its node ----

#ifdef EPPROF_HAVE_OPENCL_EP
class RunCliOpenCl : public ::testing::TestWithParam<std::string> {};

TEST_P(RunCliOpenCl, EveryDeviceEventIsAttributedToItsNode) {
  TempDir dir;
  const std::string trace_path = dir.file("t.json");
  Result r = epprof({kModels + "/" + GetParam() + ".onnx", "--ep", "opencl,cpu", "--runs", "2", "--warmup", "1",
                     "--output", trace_path});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trace = epprof::testing::read_trace(trace_path);
  const AttributionCounts counts = check_attribution(trace, /*contained=*/true);
  EXPECT_GT(counts.kernels, 0u) << "no device kernels traced";
  EXPECT_GT(counts.memcpys, 0u) << "no transfers traced";
  bool opencl_nodes = false;
  for (const auto& n : events_of(trace, "Node")) opencl_nodes |= n.arg("provider") == "OpenCLExecutionProvider";
  EXPECT_TRUE(opencl_nodes) << "no node ran on the OpenCL EP";
}

TEST_P(RunCliOpenCl, OutputsMatchTheCpuEp) {
  TempDir dir;
  const std::string model = kModels + "/" + GetParam() + ".onnx";
  ASSERT_EQ(epprof({model, "--runs", "1", "--warmup", "0", "--no-profile", "--save-outputs", dir.file("cpu")}).exit_code, 0);
  Result r = epprof({model, "--ep", "opencl,cpu", "--runs", "1", "--warmup", "0", "--no-profile", "--save-outputs",
                     dir.file("ocl")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("cpu"))) {
    const auto cpu = epprof::rt::read_tensor_file(entry.path().string()).tensor;
    const auto ocl = epprof::rt::read_tensor_file(dir.file("ocl/" + entry.path().filename().string())).tensor;
    ASSERT_EQ(cpu.shape(), ocl.shape());
    const float* a = cpu.data<float>();
    const float* b = ocl.data<float>();
    for (int64_t i = 0; i < cpu.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-5 + 1e-3 * std::fabs(a[i])) << entry.path() << " element " << i;
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

INSTANTIATE_TEST_SUITE_P(BundledModels, RunCliOpenCl, ::testing::Values("mlp", "cnn", "transformer"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(RunCliOpenClScopes, ParallelSessionAndRunTracesAreEachAttributedToTheirOwnScope) {
  TempDir dir;
  const std::string trace_path = dir.file("cnn.json");
  Result r = epprof({kModels + "/cnn.onnx", "--ep", "opencl,cpu", "--executor", "parallel", "--threads", "2",
                     "--runs", "2", "--warmup", "1", "--run-profiling", "--output", trace_path});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto session = epprof::testing::read_trace(trace_path);
  const AttributionCounts whole = check_attribution(session, /*contained=*/false);
  ASSERT_GT(whole.kernels, 0u);

  size_t kernels = 0, memcpys = 0;
  std::set<std::string> ids_seen;
  for (int run = 1; run <= 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const auto trace = epprof::testing::read_trace(dir.file("cnn.run" + std::to_string(run) + ".json"));
    const AttributionCounts c = check_attribution(trace, /*contained=*/false);
    EXPECT_GT(c.kernels, 0u);
    kernels += c.kernels;
    memcpys += c.memcpys;
    for (const auto& n : events_of(trace, "Node")) EXPECT_TRUE(ids_seen.insert(n.arg("correlation_id")).second);
  }
  // The run scopes together saw exactly the device work of the session.
  EXPECT_EQ(kernels, whole.kernels);
  EXPECT_EQ(memcpys, whole.memcpys);
}
#endif

#ifdef EPPROF_REFUSED_EP_PATH
TEST(RunCli, AnEpRefusedAtLoadLeavesItsNodesToTheNextEp) {
  TempDir dir;
  const std::string refused = EPPROF_REFUSED_EP_PATH;
  Result r = epprof({kModels + "/mlp.onnx", "--ep", refused + ",cpu", "--runs", "1", "--save-outputs", dir.file("a"),
                     "--output", dir.file("t.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("its nodes run on the next EP in --ep (cpu)"), std::string::npos) << r.output;
  // The results are those of the CPU EP alone.
  ASSERT_EQ(epprof({kModels + "/mlp.onnx", "--runs", "1", "--no-profile", "--save-outputs", dir.file("b")}).exit_code, 0);
  size_t compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("a"))) {
    const auto a = epprof::rt::read_tensor_file(entry.path().string()).tensor;
    const auto b = epprof::rt::read_tensor_file(dir.file("b/" + entry.path().filename().string())).tensor;
    ASSERT_EQ(a.size(), b.size());
    for (int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]);
    ++compared;
  }
  EXPECT_GT(compared, 0u);
  // As the only EP it is an error.
  r = epprof({kModels + "/mlp.onnx", "--ep", refused, "--output", dir.file("t2.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(refused), std::string::npos) << r.output;
}
#endif

// ---- counters per dispatch ----

// The dims of the i-th tensor of an input_type_shape arg.
std::vector<int64_t> dims_of(const std::string& args_json, const char* key, size_t i) {
  simdjson::dom::parser parser;
  simdjson::dom::element args;
  std::vector<int64_t> out;
  if (parser.parse(args_json).get(args)) return out;
  simdjson::dom::array list;
  if (args[key].get(list)) return out;
  size_t k = 0;
  for (simdjson::dom::element t : list) {
    if (k++ != i) continue;
    for (auto field : simdjson::dom::object(t))
      for (simdjson::dom::element d : simdjson::dom::array(field.value)) out.push_back(int64_t(d));
  }
  return out;
}

TEST(RunCli, CountersLandOnNodeEventsAndCounterTracks) {
  TempDir dir;
  const std::string trace_path = dir.file("mlp.json");
  Result r = epprof({kModels + "/mlp.onnx", "--runs", "2", "--warmup", "0", "--counters", "task-clock,flops,bytes",
                     "--output", trace_path});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("task-clock"), std::string::npos) << "no counter table:\n" << r.output;
  const auto trace = epprof::testing::read_trace(trace_path);
  size_t gemms = 0;
  std::map<std::string, size_t> samples;
  for (const auto& e : trace)
    if (e.ph == "C") ++samples[e.name];
  for (const auto& n : events_of(trace, "Node")) {
    SCOPED_TRACE(n.name);
    ASSERT_TRUE(n.has_arg("task-clock") && n.has_arg("flops") && n.has_arg("bytes")) << n.args_json;
    EXPECT_GE(std::stoll(n.arg("task-clock")), 0);
    // bytes: what the node read and wrote, the sizes ONNX Runtime reports.
    EXPECT_EQ(std::stoll(n.arg("bytes")), std::stoll(n.arg("activation_size")) + std::stoll(n.arg("parameter_size")) +
                                              std::stoll(n.arg("output_size")));
    if (n.arg("op_name") != "Gemm") continue;
    // flops of Gemm(A[M,K], B[N,K]^T, C): 2*M*N*K multiply-adds, + M*N for adding C.
    const auto a = dims_of(n.args_json, "input_type_shape", 0), y = dims_of(n.args_json, "output_type_shape", 0);
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(y.size(), 2u);
    EXPECT_EQ(std::stoll(n.arg("flops")), 2 * y[0] * y[1] * a[1] + y[0] * y[1]);
    ++gemms;
  }
  EXPECT_GT(gemms, 0u);
  const size_t nodes = events_of(trace, "Node").size();
  for (const char* c : {"task-clock", "flops", "bytes"}) EXPECT_EQ(samples[c], nodes) << c << " counter track";
}

// Counters need no trace: the run's one observer feeds the session alone.
TEST(RunCli, CountersWithoutATracePrintTheirTable) {
  Result r = epprof({kModels + "/mlp.onnx", "--runs", "2", "--warmup", "0", "--counters", "task-clock,flops",
                     "--no-profile"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Gemm"), std::string::npos) << "no counter table:\n" << r.output;
  EXPECT_NE(r.output.find("flops"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("trace:"), std::string::npos) << "a trace without --output:\n" << r.output;
}

TEST(RunCli, CounterNamesAreCheckedWithSuggestions) {
  Result r = epprof({kModels + "/mlp.onnx", "--counters", "task-clok", "--runs", "1", "--no-profile"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("unknown counter 'task-clok'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean: task-clock"), std::string::npos) << r.output;
  // Hardware counters: values on a machine with a PMU, a reason (never zeros) without one.
  r = epprof({kModels + "/mlp.onnx", "--counters", "cycles", "--runs", "1", "--no-profile"});
  if (r.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("unsupported on this machine"), std::string::npos) << r.output;
  }
}

// ---- the analysis tools on what `epprof run` writes ----

// The default trace has ONNX Runtime's integer microseconds; device slices
// under a microsecond (the OpenCL EP's small kernels) are written 1 us long
// with their exact length in a dur_ns arg. --timestamps fractional keeps
// the ns digits.
TEST(RunCliTimestamps, IntegerMicrosecondsByDefaultFractionalOnRequest) {
  TempDir dir;
  const std::regex number("\"(ts|dur)\":(-?[0-9]+(\\.[0-9]+)?)");
  auto scan = [&](const std::string& path, size_t* fractional, size_t* values) {
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    *fractional = *values = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
      ++*values;
      if ((*it)[3].matched) ++*fractional;
    }
    return text;
  };
  auto args_for = [&](const std::string& output) {
    std::vector<std::string> args = {kModels + "/cnn.onnx", "--runs", "3", "--no-table", "--output", output};
#ifdef EPPROF_HAVE_OPENCL_EP
    args.insert(args.end(), {"--ep", "opencl,cpu"});
#endif
    return args;
  };
  Result r = epprof(args_for(dir.file("i.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t fractional = 0, values = 0;
  scan(dir.file("i.json"), &fractional, &values);
  EXPECT_GT(values, 100u);
  EXPECT_EQ(fractional, 0u) << "every ts and dur an integer";
  for (const auto& e : epprof::testing::read_trace(dir.file("i.json"))) {
    const std::string exact = e.arg("dur_ns");
    if (exact.empty()) continue;
    EXPECT_EQ(e.dur, 1) << e.name;
    EXPECT_TRUE(std::stoll(exact) >= 1 && std::stoll(exact) <= 999) << e.name << ": dur_ns " << exact;
  }
  r = epprof_cmd("validate", {dir.file("i.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;

  std::vector<std::string> args = args_for(dir.file("f.json"));
  args.insert(args.end(), {"--timestamps", "fractional"});
  r = epprof(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = scan(dir.file("f.json"), &fractional, &values);
  EXPECT_GT(fractional, values / 2) << "ns digits on most";
  EXPECT_EQ(text.find("\"dur_ns\""), std::string::npos);
  r = epprof({kModels + "/cnn.onnx", "--timestamps", "seconds"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--timestamps wants integer or fractional, not 'seconds'"), std::string::npos) << r.output;
}

TEST(RunCliTools, ValidateAndReportAcceptEveryKindOfRunTrace) {
  TempDir dir;
  std::vector<std::vector<std::string>> runs = {
      {kModels + "/cnn.onnx", "--runs", "2"},
      {kModels + "/transformer.onnx", "--executor", "parallel", "--threads", "2", "--runs", "2", "--run-profiling"},
      {kModels + "/mlp.onnx", "--runs", "2", "--counters", "task-clock,flops"},
      {kModels + "/mlp.onnx", "--runs", "2", "--integer-timestamps"},
  };
#ifdef EPPROF_HAVE_OPENCL_EP
  runs.push_back({kModels + "/cnn.onnx", "--ep", "opencl,cpu", "--runs", "2", "--executor", "parallel"});
#endif
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string trace_path = dir.file("t" + std::to_string(i) + ".json");
    std::vector<std::string> args = runs[i];
    args.insert(args.end(), {"--output", trace_path, "--no-table"});
    Result r = epprof(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = epprof_cmd("validate", {trace_path});
    EXPECT_EQ(r.exit_code, 0) << runs[i][0] << ": " << r.output;
    r = epprof_cmd("report", {trace_path});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("op"), std::string::npos) << r.output;
  }
}

// ---- bad input: a clear message, exit 1, no crash ----

struct BadModel {
  const char* name;
  std::string bytes;
  std::vector<std::string> mentions;
};

std::vector<BadModel> bad_models() {
  std::vector<BadModel> out;
  out.push_back({"not_a_model", "plain text, not a protobuf\n", {"not an ONNX model"}});
  std::ifstream cnn(kModels + "/cnn.onnx", std::ios::binary);
  std::string full((std::istreambuf_iterator<char>(cnn)), std::istreambuf_iterator<char>());
  out.push_back({"truncated", full.substr(0, full.size() / 2), {"truncated"}});
  {
    auto m = rtt::make_model();
    rtt::add_io(m, true, "x", {2});
    rtt::add_node(m, "Add", "first", {"x", "b"}, {"a"});
    rtt::add_node(m, "Relu", "second", {"a"}, {"b"});
    rtt::add_io(m, false, "b", {2});
    out.push_back({"cycle", rtt::bytes(m), {"cycle", "first"}});
  }
  {
    auto m = rtt::make_model();
    rtt::add_io(m, true, "x", {2});
    rtt::add_node(m, "Add", "adder", {"x", "ghost"}, {"y"});
    rtt::add_io(m, false, "y", {2});
    out.push_back({"dangling_input", rtt::bytes(m), {"adder", "ghost"}});
  }
  {
    auto m = rtt::make_model();
    rtt::add_io(m, true, "x", {2});
    auto* ms = m.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
    rtt::add_node(m, "NoSuchOp", "gap_node", {"x"}, {"a"});
    rtt::add_node(m, "FusedGelu", "contrib_node", {"a"}, {"y"})->set_domain("com.microsoft");
    rtt::add_io(m, false, "y", {2});
    out.push_back({"unsupported_ops", rtt::bytes(m),
                   {"2 ops", "NoSuchOp (opset 17): 1 node, first 'gap_node'",
                    "com.microsoft.FusedGelu (custom domain 'com.microsoft', version 1)"}});
  }
  {
    auto m = rtt::relu_model();
    m.mutable_opset_import(0)->set_version(19);
    out.push_back({"opset_too_new", rtt::bytes(m), {"19"}});
  }
  {
    auto m = rtt::relu_model();
    rtt::add_float_init(m, "w", {2, 2}, {1, 2, 3});
    out.push_back({"initializer_size", rtt::bytes(m), {"'w'", "[2,2]"}});
  }
  return out;
}

class RunCliBadModel : public ::testing::TestWithParam<size_t> {};

TEST_P(RunCliBadModel, ExitsOneWithAMessageNamingTheProblem) {
  const BadModel bad = bad_models()[GetParam()];
  TempDir dir;
  const std::string path = dir.file(std::string(bad.name) + ".onnx");
  std::ofstream(path, std::ios::binary) << bad.bytes;
  Result r = epprof({path, "--runs", "1", "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.rfind("epprof run: ", 0), 0u) << r.output;
  for (const auto& m : bad.mentions) EXPECT_NE(r.output.find(m), std::string::npos) << "'" << m << "' not in: " << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.json"))) << "a failed run left a trace";
}

INSTANTIATE_TEST_SUITE_P(Kinds, RunCliBadModel, ::testing::Range<size_t>(0, 7),
                         [](const ::testing::TestParamInfo<size_t>& p) { return std::string(bad_models()[p.param].name); });

TEST(RunCli, InputOfTheWrongShapeIsNamed) {
  TempDir dir;
  const std::string model = dir.file("relu.onnx");
  std::ofstream(model, std::ios::binary) << rtt::bytes(rtt::relu_model());
  epprof::rt::write_tensor_file(dir.file("x.pb"), epprof::rt::Tensor(epprof::rt::DataType::Float, {3, 2}), "x");
  Result r = epprof({model, "--input", "x=" + dir.file("x.pb"), "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("'x'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("shape"), std::string::npos) << r.output;

  r = epprof({model, "--input", "nosuch=" + dir.file("x.pb"), "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no input named 'nosuch'"), std::string::npos) << r.output;
}

// --input FILE, without NAME=, takes the input the file's tensor is named
// for, as ONNX test data's input_N.pb files are; a nameless tensor, an
// input given twice and a name the model lacks are refused, naming the file.
TEST(RunCli, AnInputFileWithoutANameFeedsTheInputItsTensorIsNamedFor) {
  TempDir dir;
  const std::string model = dir.file("relu.onnx");
  std::ofstream(model, std::ios::binary) << rtt::bytes(rtt::relu_model());
  const epprof::rt::Tensor x = epprof::rt::Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  epprof::rt::write_tensor_file(dir.file("input_0.pb"), x, "x");
  Result r = epprof({model, "--input", dir.file("input_0.pb"), "--no-profile", "--save-outputs", dir.file("out")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto y = epprof::rt::read_tensor_file(dir.file("out/y.pb"));
  ASSERT_EQ(y.tensor.size(), 6);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.tensor.data<float>()[i], std::max(0.0f, x.data<float>()[i]));

  epprof::rt::write_tensor_file(dir.file("nameless.pb"), x, "");
  r = epprof({model, "--input", dir.file("nameless.pb"), "--no-profile"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("has no name; give NAME=" + dir.file("nameless.pb")), std::string::npos) << r.output;

  r = epprof({model, "--input", dir.file("input_0.pb"), "--input", "x=" + dir.file("input_0.pb"), "--no-profile"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("input 'x' is given twice"), std::string::npos) << r.output;

  epprof::rt::write_tensor_file(dir.file("other.pb"), x, "other");
  r = epprof({model, "--input", dir.file("other.pb"), "--no-profile"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no input named 'other' (the name in " + dir.file("other.pb") + ")"), std::string::npos)
      << r.output;
}

// Random inputs get 1 for a dynamic dim; a run that then fails says so,
// naming the input and the shape it was given.
TEST(RunCli, AFailedRunOnGeneratedInputsNamesTheirDynamicDims) {
  TempDir dir;
  auto m = rtt::make_model();
  rtt::add_io(m, true, "image", {1, 1, 0, 0});
  auto* dims = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(2)->set_dim_param("height");  // symbolic, as exporters write them
  dims->mutable_dim(3)->set_dim_param("width");
  auto* pool = rtt::add_node(m, "MaxPool", "pool", {"image"}, {"y"});
  rtt::set_ints(pool, "kernel_shape", {3, 3});
  rtt::add_io(m, false, "y", {1, 1, -1, -1});
  const std::string model = dir.file("pool.onnx");
  std::ofstream(model, std::ios::binary) << rtt::bytes(m);
  Result r = epprof({model, "--runs", "1", "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("random inputs with dynamic dims set to 1: 'image' [1,1,1,1]"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--input NAME=FILE"), std::string::npos) << r.output;

  // Given a real input, it runs, and no such note is printed.
  epprof::rt::write_tensor_file(dir.file("image.pb"), epprof::rt::Tensor(epprof::rt::DataType::Float, {1, 1, 5, 5}),
                                "image");
  r = epprof({model, "--runs", "1", "--input", "image=" + dir.file("image.pb"), "--output", dir.file("u.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("dynamic dims"), std::string::npos) << r.output;

  // Or given a shape: random values of that shape, which the trace records.
  r = epprof({model, "--runs", "1", "--shape", "image=1x1x6x7", "--output", dir.file("v.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int pools = 0;
  for (const auto& e : epprof::testing::read_trace(dir.file("v.json")))
    if (e.name == "pool_kernel_time" && e.ph == "X") {
      ++pools;
      EXPECT_NE(e.args_json.find("\"input_type_shape\":[{\"float\":[1,1,6,7]}]"), std::string::npos) << e.args_json;
      EXPECT_NE(e.args_json.find("\"output_type_shape\":[{\"float\":[1,1,4,5]}]"), std::string::npos) << e.args_json;
    }
  EXPECT_GT(pools, 0);
  // A shape that breaks the declared rank or a fixed dim, an input the model
  // lacks, and malformed dims are refused, naming what is wrong.
  r = epprof({model, "--shape", "image=1x1x6", "--output", dir.file("w.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--shape image=[1,1,6]: input 'image' is declared [1,1,-1,-1]"), std::string::npos)
      << r.output;
  r = epprof({model, "--shape", "image=1x2x6x7", "--output", dir.file("w.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("dim 1 is fixed"), std::string::npos) << r.output;
  r = epprof({model, "--shape", "nosuch=1", "--output", dir.file("w.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--shape: the model has no input named 'nosuch'"), std::string::npos) << r.output;
  for (const char* bad : {"image", "=1x2", "image=", "image=1xx2", "image=1x-2", "image=1x2x"}) {
    r = epprof({model, "--shape", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("--shape needs NAME=DIMS"), std::string::npos) << bad << ": " << r.output;
  }
}

// By default nodes computed from initializers alone run once, at session
// creation, and are in no run's events (as in ONNX Runtime's profile);
// --no-constant-folding runs and traces them on every run.
TEST(RunCli, ConstantFoldingLeavesFoldedNodesOutOfTheTrace) {
  TempDir dir;
  auto m = rtt::make_model();
  rtt::add_io(m, true, "x", {2});
  rtt::add_float_init(m, "w", {2}, {1, 2});
  rtt::add_node(m, "Neg", "neg_w", {"w"}, {"k"});
  rtt::add_node(m, "Add", "add", {"x", "k"}, {"y"});
  rtt::add_io(m, false, "y", {2});
  const std::string model = dir.file("fold.onnx");
  std::ofstream(model, std::ios::binary) << rtt::bytes(m);
  for (const bool fold : {true, false}) {
    SCOPED_TRACE(fold ? "default" : "--no-constant-folding");
    const std::string trace = dir.file(fold ? "folded.json" : "unfolded.json");
    std::vector<std::string> args{model, "--runs", "2", "--warmup", "0", "--no-table", "--output", trace};
    if (!fold) args.push_back("--no-constant-folding");
    Result r = epprof(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::map<std::string, int> nodes;
    for (const auto& e : epprof::testing::read_trace(trace))
      if (e.cat == "Node" && e.ph == "X") ++nodes[e.name];
    EXPECT_EQ(nodes["add_kernel_time"], 2);
    EXPECT_EQ(nodes["neg_w_kernel_time"], fold ? 0 : 2);
  }
}

// By default the bundled CNN runs as ONNX Runtime runs it: its
// BatchNormalizations folded into the Convs, and Conv [+ Add] + Relu as one
// FusedConv named after the Conv; the summary and the trace's metadata say
// so. --no-fusion runs and traces the graph as written.
TEST(RunCli, FusionRunsTheCnnAsOnnxRuntimeDoes) {
  TempDir dir;
  for (const bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "default" : "--no-fusion");
    const std::string trace = dir.file(fuse ? "fused.json" : "plain.json");
    std::vector<std::string> args{"--runs", "1", "--warmup", "0", "--no-table", "--threads", "1", "--output", trace};
    if (!fuse) args.push_back("--no-fusion");
    Result r = epprof(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("fused: 7 BatchNormalization folded into Conv") != std::string::npos, fuse) << r.output;
    std::map<std::string, int> ops;
    std::string fusions;
    bool stem = false;
    for (const auto& e : epprof::testing::read_trace(trace)) {
      if (e.cat == "Node" && e.ph == "X") ++ops[e.arg("op_name")], stem |= e.name == "stem.conv_kernel_time";
      if (e.ph == "M" && e.name == "epprof_metadata") fusions = e.arg("fusions");
    }
    EXPECT_TRUE(stem) << "the fused node keeps the Conv's name";
    EXPECT_EQ(ops["BatchNormalization"], fuse ? 0 : 7);
    EXPECT_EQ(ops["Relu"], fuse ? 0 : 7);
    EXPECT_EQ(ops["FusedConv"], fuse ? 7 : 0);
    EXPECT_EQ(fusions == "none", !fuse) << fusions;
  }
}

TEST(RunCli, SavedOutputsAreTensorProtoFilesNamedAfterTheGraphOutputs) {
  TempDir dir;
  const std::string model = dir.file("relu.onnx");
  std::ofstream(model, std::ios::binary) << rtt::bytes(rtt::relu_model());
  epprof::rt::Tensor x = epprof::rt::Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  epprof::rt::write_tensor_file(dir.file("x.pb"), x, "x");
  Result r = epprof({model, "--input", "x=" + dir.file("x.pb"), "--no-profile", "--save-outputs", dir.file("out")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto y = epprof::rt::read_tensor_file(dir.file("out/y.pb"));
  ASSERT_EQ(y.tensor.size(), 6);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.tensor.data<float>()[i], std::max(0.0f, x.data<float>()[i]));
}

TEST(RunCli, CommandLineErrors) {
  TempDir dir;
  const std::string out = dir.file("t.json");
  Result r = epprof({"--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown option '--frobnicate'"), std::string::npos) << r.output;
  r = epprof({"--runs", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--runs"), std::string::npos) << r.output;
  r = epprof({"--executor", "quantum"});
  EXPECT_EQ(r.exit_code, 2);
  r = epprof({"--ep", "nosuchep,cpu", "--output", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown execution provider 'nosuchep'"), std::string::npos) << r.output;
  r = epprof({"/nonexistent/model.onnx", "--output", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("/nonexistent/model.onnx"), std::string::npos) << r.output;
  r = epprof({kModels + "/mlp.onnx", "--output", "/nonexistent-dir/t.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("/nonexistent-dir"), std::string::npos) << r.output;
  r = epprof({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--ep LIST"), std::string::npos);
}

// ---- issue 14: --threads governs all intra-op threads ----

// Runs `epprof run ARGS...` (stdout to /dev/null) and samples every thread's
// CPU time (utime + stime, clock ticks, /proc/PID/task/*/stat) until it
// exits: each thread's last sample. With `baseline`, also the samples of the
// moment the busiest thread first reached `warm_ticks` (the runs under way,
// start-up behind). Returns the exit status.
int run_sampling_threads(const std::vector<std::string>& args, std::map<int, long>& ticks,
                         std::map<int, long>* baseline = nullptr, long warm_ticks = 0) {
  std::vector<std::string> words = {EPPROF_CLI_PATH, "run"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) return -1;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  int status = 0;
  bool warm = baseline == nullptr;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    long busiest = 0;
    if (DIR* dir = opendir(task_dir.c_str())) {
      while (dirent* e = readdir(dir)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        // A thread may end between readdir and the read (ESRCH): skip it.
        std::string stat(512, '\0');
        const int fd = open((task_dir + "/" + e->d_name + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
        const ssize_t got = fd >= 0 ? read(fd, stat.data(), stat.size()) : -1;
        if (fd >= 0) close(fd);
        if (got <= 0) continue;
        stat.resize(size_t(got));
        const size_t paren = stat.rfind(')');
        if (paren == std::string::npos) continue;
        std::istringstream fields(stat.substr(paren + 2));
        std::string f;
        long cpu = 0;
        for (int i = 3; i <= 15 && fields >> f; ++i)  // 14: utime, 15: stime
          if (i == 14 || i == 15) cpu += std::stol(f);
        ticks[std::stoi(e->d_name)] = cpu;
        busiest = std::max(busiest, cpu);
      }
      closedir(dir);
    }
    if (!warm && busiest >= warm_ticks) {
      *baseline = ticks;
      warm = true;
    }
    usleep(5000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RunCli, ThreadsOneKeepsTheSequentialRunsOnOneThread) {
  TempDir dir;
  const std::string out = dir.file("t1.json");
  // Only what the runs do once under way counts: from the moment the busiest
  // thread has 0.3 s of CPU to the end. Before it, OpenBLAS starts a pool of
  // its own when it loads, whose idle workers spin for a while (by the
  // machine's core count and load) before any run sets the count.
  std::map<int, long> start, end;
  ASSERT_EQ(run_sampling_threads({"--threads", "1", "--runs", "1500", "--no-table", "--output", out}, end, &start, 30),
            0);
  ASSERT_FALSE(start.empty()) << "the run ended before its busiest thread had 0.3 s of CPU";
  std::vector<long> worked;
  for (const auto& [tid, t] : end) worked.push_back(t - (start.count(tid) ? start.at(tid) : 0));
  std::sort(worked.rbegin(), worked.rend());
  const long busiest = worked[0];
  const long others = std::accumulate(worked.begin() + 1, worked.end(), 0L);
  ASSERT_GE(busiest, 20) << "the runs took too little CPU time to judge";
  // Clock ticks are 10 ms: beside the one working thread, a few stray ticks
  // (scheduling noise, the profiler's slab provisioner) and no more.
  EXPECT_LE(others, 3 + busiest / 50) << "threads other than the busiest worked: " << others << " ticks beside "
                                      << busiest;
  // The trace agrees: every node ran on one thread, and the settings are recorded.
  const auto trace = epprof::testing::read_trace(out);
  std::set<int64_t> tids;
  for (const auto& n : events_of(trace, "Node")) tids.insert(n.tid);
  EXPECT_EQ(tids.size(), 1u);
  const TraceEvent* meta = metadata(trace);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->arg("intra_op_threads"), "1");
  EXPECT_EQ(meta->arg("inter_op_threads"), "0");
  EXPECT_EQ(meta->arg("executor"), "sequential");
}

TEST(RunCli, ThreadsTwoPutsASecondThreadToWork) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: no second thread can run at once";
  TempDir dir;
  std::map<int, long> ticks;
  // About 0.3 s of runs: a worker busy for half of them has 15 ticks.
  ASSERT_EQ(run_sampling_threads({"--threads", "2", "--runs", "600", "--no-table", "--no-profile"}, ticks), 0);
  std::vector<long> sorted;
  for (const auto& [tid, t] : ticks) sorted.push_back(t);
  std::sort(sorted.rbegin(), sorted.rend());
  ASSERT_GE(sorted.size(), 2u);
  EXPECT_GE(sorted[1], 5) << "no second thread worked with --threads 2 (busiest " << sorted[0] << " ticks)";
}

// The trace names the OpenBLAS kernels its runs used (epprof/rt/blas.h),
// which OPENBLAS_CORETYPE forces when set.
TEST(RunCli, TheMetadataNamesTheBlasKernels) {
  TempDir dir;
  const std::string out = dir.file("blas.json");
  for (const char* kernels : {"Haswell", "Sandybridge"}) {
    const Result r = epprof::testing::run_shell(std::string("OPENBLAS_CORETYPE=") + kernels + " " +
                                                shell_quote(EPPROF_CLI_PATH) +
                                                " run --runs 1 --warmup 0 --no-table --output " + shell_quote(out));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto trace = epprof::testing::read_trace(out);
    const TraceEvent* meta = metadata(trace);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->arg("blas_kernels"), kernels);
    EXPECT_EQ(meta->arg("sgemm_kernel"), epprof::rt::sgemm_kernels());
    EXPECT_EQ(meta->arg("conv_direct_kernel"), epprof::rt::conv_direct_kernels());
  }
}

TEST(RunCli, ThreadSettingsAreCheckedAndRecorded) {
  TempDir dir;
  for (const char* bad : {"0", "300", "-1", "two"}) {
    Result r = epprof({"--threads", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.output.find("--threads needs an integer in 1..256"), std::string::npos) << r.output;
    r = epprof({"--executor", "parallel", "--inter-op-threads", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.output.find("--inter-op-threads needs an integer in 1..256"), std::string::npos) << r.output;
  }
  // The sequential executor has no inter-op pool: the option is refused, whatever its place.
  for (const auto& args : {std::vector<std::string>{"--inter-op-threads", "2"},
                           std::vector<std::string>{"--inter-op-threads", "2", "--executor", "sequential"}}) {
    Result r = epprof(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("add --executor parallel"), std::string::npos) << r.output;
  }
  const std::string out = dir.file("p.json");
  Result r = epprof({"--inter-op-threads", "3", "--executor", "parallel", "--threads", "1", "--runs", "2",
                     "--no-table", "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("intra-op threads 1, inter-op threads 3"), std::string::npos) << r.output;
  const TraceEvent* meta = nullptr;
  const auto trace = epprof::testing::read_trace(out);
  meta = metadata(trace);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->arg("executor"), "parallel");
  EXPECT_EQ(meta->arg("intra_op_threads"), "1");
  EXPECT_EQ(meta->arg("inter_op_threads"), "3");
  r = epprof({"--help"});
  EXPECT_NE(r.output.find("--inter-op-threads N"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("one per physical core"), std::string::npos) << r.output;
}

}  // namespace
