// A profiler's trace filter (epprof_trace_filter): what a filtered trace
// keeps, in JSON and SQLite alike, what it counts as left out, and the
// errors of a bad filter. Expectations are computed from what the test
// recorded, by the rules of epprof/profiler.h, and every trace is checked
// with `epprof validate`'s validator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "report/reader.h"
#include "report/validate.h"
#include "support/test_util.h"

namespace {

using epprof::testing::config_for;
using epprof::testing::name_id;
using epprof::testing::take;
using epprof::testing::TempDir;

// One recorded node execution.
struct Node {
  std::string name, op, ep;
  uint64_t id = 0;
};

// The scope every test records: two runs of four nodes, each host event
// with its example-plugin kernel ("<op>_example_kernel", or
// "model_run_example_kernel" for a run).
const std::vector<std::vector<std::string>> kNodes = {
    {"conv_1", "Conv", "CPUExecutionProvider"},
    {"relu_1", "Relu", "CPUExecutionProvider"},
    {"conv_2", "Conv", "OpenCLExecutionProvider"},
    {"gemm_head", "Gemm", "CPUExecutionProvider"},
};
constexpr int kRuns = 2;

// What a trace holds, as the report library reads it (JSON or SQLite).
struct Written {
  std::multiset<std::string> nodes;           // node names
  std::map<uint64_t, std::string> kernels;    // correlation id → name
  std::set<uint64_t> host_ids;                // every host event's correlation id
  uint64_t runs = 0, flows = 0, memory_samples = 0;
  std::string filtered_events, filter_json;   // metadata
  bool has_mem_args = false;
};

Written read_written(const std::string& path) {
  Written w;
  const auto rr = epprof::report::read_trace_file(path, [&](const epprof::report::Event& e, std::string*) {
    auto arg = [&](const char* k) {
      const epprof::report::Arg* a = e.arg(k);
      return a ? std::string(a->value) : std::string();
    };
    if (e.name == "epprof_metadata") {
      w.filtered_events = arg("filtered_events");
      w.filter_json = arg("filter");
    } else if (e.ph == "s") {
      ++w.flows;
    } else if (e.ph == "C") {
      w.memory_samples += e.name.substr(0, 10) == "mem_in_use";
    } else if (e.cat == "Kernel") {
      w.kernels[std::stoull(arg("correlation_id"))] = std::string(e.name);
    } else if (e.cat == "Node" || e.cat == "Session") {
      if (e.cat == "Node") w.nodes.insert(std::string(e.name.substr(0, e.name.size() - 12)));  // "_kernel_time"
      w.runs += e.name == "model_run";
      w.host_ids.insert(std::stoull(arg("correlation_id")));
      w.has_mem_args |= e.arg("mem_allocated_bytes") != nullptr;
    }
    return true;
  });
  EXPECT_TRUE(rr.ok) << rr.error;
  const auto v = epprof::report::validate_trace(path);
  EXPECT_EQ(v.total(), 0u) << path << ": " << (v.violations.empty() ? "" : v.violations[0].message);
  return w;
}

// Records kRuns runs of kNodes with the example plugin into a trace at
// `path` under `filter` (nullptr: none); returns the stats, and the run and
// node ids in *runs / *nodes.
epprof_trace_stats record(const std::string& path, const epprof_trace_filter* filter, std::vector<uint64_t>* runs,
                          std::vector<Node>* nodes, bool memory = false) {
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  // The plugin's "device" on the host's clock.
  setenv("EPPROF_EXAMPLE_CLOCK", "host", 1);
  epprof_plugin_t plugin{};
  EXPECT_EQ(take(epprof_plugin_load(EPPROF_EXAMPLE_PLUGIN_PATH, &plugin)).code, EPPROF_OK);
  auto c = config_for(path);
  c.filter = filter;
  epprof_profiler_t p{};
  auto created = take(epprof_profiler_create(&c, &p));
  EXPECT_EQ(created.code, EPPROF_OK) << created.message;
  EXPECT_EQ(take(epprof_profiler_add_plugin(p, plugin)).code, EPPROF_OK);
  EXPECT_EQ(take(epprof_profiler_start(p)).code, EPPROF_OK);
  const epprof_name_id cpu = name_id("cpu");
  for (int run = 0; run < kRuns; ++run) {
    const uint64_t rid = epprof_correlation_id_next();
    runs->push_back(rid);
    EXPECT_EQ(take(epprof_event_begin(p, EPPROF_CATEGORY_SESSION, name_id("model_run"), rid)).code, EPPROF_OK);
    for (const auto& n : kNodes) {
      Node node{n[0], n[1], n[2], epprof_correlation_id_next()};
      EXPECT_EQ(take(epprof_event_begin(p, EPPROF_CATEGORY_NODE, name_id((n[0] + "_kernel_time").c_str()), node.id))
                    .code,
                EPPROF_OK);
      // The plugin's kernel takes the node's second half: 200 µs leave the
      // host clock's conversion room, so that it never seems to start
      // before its node (which the writer then puts out of track order).
      for (const int64_t until = epprof_clock_now_ns() + 200'000; epprof_clock_now_ns() < until;) {
      }
      if (memory) {
        EXPECT_EQ(take(epprof_memory_alloc(p, node.id, 64, cpu, EPPROF_MEMORY_OUTPUT)).code, EPPROF_OK);
      }
      // ONNX Runtime's node args, and the node declared: what the filters
      // judge it by and attribution copies onto its device work.
      const uint32_t index = uint32_t(nodes->size() % kNodes.size());
      epprof_arg args[4] = {{name_id("op_name"), EPPROF_ARG_NAME, {}},
                            {name_id("provider"), EPPROF_ARG_STRING, {}},
                            {name_id("node_index"), EPPROF_ARG_INT64, {}},
                            epprof::testing::set_arg(
                                epprof::testing::node_set(n[0].c_str(), n[1].c_str(), index, n[2].c_str()))};
      args[0].value.name = name_id(n[1].c_str());
      args[1].value.str = n[2].c_str();
      args[2].value.i64 = index;
      EXPECT_EQ(take(epprof_event_end(p, node.id, args, 4)).code, EPPROF_OK);
      nodes->push_back(node);
    }
    EXPECT_EQ(take(epprof_event_end(p, rid, nullptr, 0)).code, EPPROF_OK);
  }
  EXPECT_EQ(take(epprof_profiler_stop(p, &stats)).code, EPPROF_OK);
  EXPECT_EQ(take(epprof_profiler_destroy(p)).code, EPPROF_OK);
  EXPECT_EQ(take(epprof_plugin_unload(plugin)).code, EPPROF_OK);
  return stats;
}

// Records under `filter` and checks the trace against the rules: runs kept
// with their kernels; a node kept iff `keep_node`; a kernel kept iff its
// host event was and `keep_kernel` passes its name; the count left out is
// what the unfiltered scope had more.
void expect_filtered(const std::string& file, const epprof_trace_filter& filter,
                     const std::function<bool(const Node&)>& keep_node,
                     const std::function<bool(const std::string&)>& keep_kernel = nullptr) {
  SCOPED_TRACE(file);
  TempDir dir;
  std::vector<uint64_t> runs;
  std::vector<Node> nodes;
  const epprof_trace_stats stats = record(dir.file(file), &filter, &runs, &nodes);
  const Written w = read_written(dir.file(file));

  std::multiset<std::string> want_nodes;
  std::set<uint64_t> kept_hosts(runs.begin(), runs.end());
  for (const Node& n : nodes)
    if (keep_node(n)) want_nodes.insert(n.name), kept_hosts.insert(n.id);
  EXPECT_EQ(w.nodes, want_nodes);
  EXPECT_EQ(w.runs, uint64_t(kRuns)) << "runs are always kept";
  EXPECT_EQ(w.host_ids, kept_hosts);
  // Each host event has one kernel; the kept ones are those of kept hosts
  // that pass the kernel filter.
  uint64_t want_kernels = 0;
  for (const auto& [id, name] : w.kernels) EXPECT_TRUE(kept_hosts.count(id)) << name << " of a host left out";
  for (uint64_t id : kept_hosts) {
    std::string name = "model_run_example_kernel";
    for (const Node& n : nodes)
      if (n.id == id) name = n.op + "_example_kernel";
    if (keep_kernel && !keep_kernel(name)) {
      EXPECT_FALSE(w.kernels.count(id)) << name;
      continue;
    }
    ++want_kernels;
    EXPECT_EQ(w.kernels.count(id), 1u) << name;
  }
  EXPECT_EQ(w.kernels.size(), want_kernels);
  EXPECT_EQ(w.flows, want_kernels) << "one flow per kept kernel, none to what was left out";
  const uint64_t total = runs.size() + nodes.size();  // host events, and as many kernels
  EXPECT_EQ(stats.host_events, kept_hosts.size());
  EXPECT_EQ(stats.device_events, want_kernels);
  EXPECT_EQ(stats.filtered_events, 2 * total - kept_hosts.size() - want_kernels);
  EXPECT_EQ(w.filtered_events, std::to_string(stats.filtered_events));
  EXPECT_FALSE(w.filter_json.empty()) << "a filtered trace says so in its metadata";
}

epprof_trace_filter empty_filter() {
  epprof_trace_filter f{};
  f.size = sizeof f;
  return f;
}

TEST(TraceFilter, ByOpTypeKeepsMatchingNodesRunsAndTheirDeviceWork) {
  const char* ops[] = {"Conv"};
  auto f = empty_filter();
  f.op_types = ops;
  f.num_op_types = 1;
  auto conv = [](const Node& n) { return n.op == "Conv"; };
  expect_filtered("ops.json", f, conv);
  expect_filtered("ops.db", f, conv);  // the SQLite trace leaves out the same
}

TEST(TraceFilter, ByNodeNameOrRegex) {
  const char* names[] = {"relu_1"};
  auto f = empty_filter();
  f.node_names = names;
  f.num_node_names = 1;
  f.node_name_regex = "conv_.*";  // either passes
  expect_filtered("nodes.json", f, [](const Node& n) { return n.name == "relu_1" || n.name.rfind("conv_", 0) == 0; });
  // The regex matches the whole node name, not the event's "_kernel_time" name.
  auto g = empty_filter();
  g.node_name_regex = "gemm";
  expect_filtered("whole.json", g, [](const Node&) { return false; });
}

TEST(TraceFilter, ByEpAndOpTogether) {
  const char* eps[] = {"CPUExecutionProvider"};
  const char* ops[] = {"Conv", "Gemm"};
  auto f = empty_filter();
  f.ep_names = eps;
  f.num_ep_names = 1;
  f.op_types = ops;
  f.num_op_types = 2;
  expect_filtered("ep.json", f,
                  [](const Node& n) { return n.ep == "CPUExecutionProvider" && (n.op == "Conv" || n.op == "Gemm"); });
}

TEST(TraceFilter, KernelRegexOnDeviceEventsOnly) {
  auto f = empty_filter();
  f.kernel_name_regex = "(Conv|model_run)_example_kernel";
  auto all = [](const Node&) { return true; };
  const std::regex re(f.kernel_name_regex);
  expect_filtered("kernels.json", f, all, [&](const std::string& k) { return std::regex_match(k, re); });
}

TEST(TraceFilter, CategoriesLeaveOutHostAndDeviceEventsButNotRuns) {
  auto f = empty_filter();
  f.categories = 1u << EPPROF_CATEGORY_KERNEL;  // no NODE: node events go, runs stay
  expect_filtered("kernels_only.json", f, [](const Node&) { return false; });
  f.categories = 1u << EPPROF_CATEGORY_NODE;  // no KERNEL: every plugin event goes
  expect_filtered("nodes_only.db", f, [](const Node&) { return true; }, [](const std::string&) { return false; });
}

TEST(TraceFilter, MemoryTracksAreDeviceWideAndFollowTheMemoryCategory) {
  TempDir dir;
  std::vector<uint64_t> runs;
  std::vector<Node> nodes;
  const char* ops[] = {"Relu"};
  auto f = empty_filter();
  f.op_types = ops;
  f.num_op_types = 1;
  record(dir.file("mem.json"), &f, &runs, &nodes, true);
  Written w = read_written(dir.file("mem.json"));
  // Every node's allocation moves the device's track, kept or not.
  EXPECT_EQ(w.memory_samples, nodes.size());
  EXPECT_TRUE(w.has_mem_args);
  f.categories = (1u << EPPROF_CATEGORY_NODE) | (1u << EPPROF_CATEGORY_KERNEL);  // no MEMORY
  runs.clear();
  nodes.clear();
  record(dir.file("nomem.json"), &f, &runs, &nodes, true);
  w = read_written(dir.file("nomem.json"));
  EXPECT_EQ(w.memory_samples, 0u);
  EXPECT_FALSE(w.has_mem_args);
}

TEST(TraceFilter, MetadataDescribesTheFilter) {
  const char* ops[] = {"Conv"};
  auto f = empty_filter();
  f.op_types = ops;
  f.num_op_types = 1;
  f.categories = (1u << EPPROF_CATEGORY_NODE) | (1u << EPPROF_CATEGORY_KERNEL);
  f.kernel_name_regex = "Conv.*";
  TempDir dir;
  std::vector<uint64_t> runs;
  std::vector<Node> nodes;
  record(dir.file("t.json"), &f, &runs, &nodes);
  const Written w = read_written(dir.file("t.json"));
  EXPECT_NE(w.filter_json.find("\"categories\":[\"node\",\"kernel\"]"), std::string::npos) << w.filter_json;
  EXPECT_NE(w.filter_json.find("\"op_types\":[\"Conv\"]"), std::string::npos) << w.filter_json;
  EXPECT_NE(w.filter_json.find("\"kernel_name_regex\":\"Conv.*\""), std::string::npos) << w.filter_json;
}

TEST(TraceFilter, NoFilterOrAnEmptyOneLeavesTheTraceWhole) {
  TempDir dir;
  std::vector<uint64_t> runs;
  std::vector<Node> nodes;
  const auto whole = record(dir.file("none.json"), nullptr, &runs, &nodes);
  const auto f = empty_filter();
  const auto empty = record(dir.file("empty.json"), &f, &runs, &nodes);
  for (const auto* s : {&whole, &empty}) {
    EXPECT_EQ(s->host_events, uint64_t(kRuns) * (kNodes.size() + 1));
    EXPECT_EQ(s->device_events, s->host_events);
    EXPECT_EQ(s->filtered_events, 0u);
  }
  EXPECT_TRUE(read_written(dir.file("none.json")).filter_json.empty());
  EXPECT_TRUE(read_written(dir.file("empty.json")).filter_json.empty());
}

TEST(TraceFilter, BadFiltersAreRefusedNamingTheField) {
  TempDir dir;
  const std::string path = dir.file("t.json");
  const char* with_null[] = {"Conv", nullptr};
  struct Case {
    const char* what;
    std::function<void(epprof_trace_filter&)> set;
    epprof_status_code code;
  };
  const std::vector<Case> cases = {
      {"filter->size (8) is too small", [](epprof_trace_filter& f) { f.size = 8; }, EPPROF_INVALID_ARGUMENT},
      {"filter->categories has bit 7 set", [](epprof_trace_filter& f) { f.categories = 1u << 7; },
       EPPROF_INVALID_ARGUMENT},
      {"filter->op_types[1] is NULL",
       [&](epprof_trace_filter& f) {
         f.op_types = with_null;
         f.num_op_types = 2;
       },
       EPPROF_INVALID_ARGUMENT},
      {"filter->ep_names is NULL with num_ep_names = 3", [](epprof_trace_filter& f) { f.num_ep_names = 3; },
       EPPROF_INVALID_ARGUMENT},
      {"filter->node_name_regex '(' is not a valid ECMAScript regular expression",
       [](epprof_trace_filter& f) { f.node_name_regex = "("; }, EPPROF_INVALID_ARGUMENT},
      {"filter->kernel_name_regex '[z-a]' is not a valid",
       [](epprof_trace_filter& f) { f.kernel_name_regex = "[z-a]"; }, EPPROF_INVALID_ARGUMENT},
  };
  for (const Case& k : cases) {
    auto f = empty_filter();
    k.set(f);
    auto c = config_for(path);
    c.filter = &f;
    epprof_profiler_t p{};
    const auto r = take(epprof_profiler_create(&c, &p));
    EXPECT_EQ(r.code, k.code) << k.what;
    EXPECT_NE(r.message.find(k.what), std::string::npos) << r.message;
    EXPECT_EQ(p.handle, 0u);
  }
}

TEST(TraceFilter, AConfigWithoutTheFilterFieldReadsNone) {
  TempDir dir;
  const std::string path = dir.file("t.json");
  epprof_trace_filter bad{};  // would be refused (size 0) if it were read
  auto c = config_for(path);
  c.filter = &bad;
  c.size = offsetof(epprof_profiler_config, filter);  // a caller built before the field
  epprof_profiler_t p{};
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_EXPECT_OK(epprof_profiler_destroy(p));
}

TEST(TraceFilter, CategoryNames) {
  EXPECT_STREQ(epprof_category_name(EPPROF_CATEGORY_SESSION), "session");
  EXPECT_STREQ(epprof_category_name(EPPROF_CATEGORY_MEMCPY), "memcpy");
  EXPECT_STREQ(epprof_category_name(EPPROF_CATEGORY_MEMORY), "memory");
  EXPECT_EQ(epprof_category_name(EPPROF_CATEGORY_COUNT_), nullptr);
  EXPECT_EQ(epprof_category_name(epprof_category(-1)), nullptr);
}

}  // namespace
