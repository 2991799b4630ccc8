// The golden trace: one deterministic scope -- a fixed clock, fixed
// correlation ids, one thread, the example plugin on the host's clock --
// written by the whole way out (collection, merge, attribution, flows,
// session delivery, JSON export) and compared byte for byte with
// tests/integration/data/golden_trace.json. It pins today's output so that
// restructuring the way out cannot change a byte unnoticed; a change that
// means to change the trace regenerates the file on purpose:
//
//   EPPROF_UPDATE_GOLDEN=1 build/bin/epprof_golden_tests
//
// and the diff of the golden file is part of that change's review. Only what
// no run can fix is normalised: the process id and the thread id.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/clock.h"
#include "support/test_util.h"

namespace {

using epprof::testing::config_for;
using epprof::testing::name_id;
using epprof::testing::TempDir;

// Every clock read advances 250 ns, from an arbitrary fixed instant.
int64_t g_fake_now = 0;
int64_t fake_clock() { return g_fake_now += 250; }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces every `"key":value` whose value is `from` with `"key":to`.
void replace_field(std::string& text, const std::string& key, const std::string& from, const std::string& to) {
  const std::string needle = "\"" + key + "\":" + from;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at)) {
    const size_t end = at + needle.size();
    if (end < text.size() && text[end] >= '0' && text[end] <= '9') {  // a longer number
      at = end;
      continue;
    }
    text.replace(at, needle.size(), "\"" + key + "\":" + to);
    at += key.size() + 3 + to.size();
  }
}

// The scope: two model runs of three nodes, with string, int, JSON and
// arg-set args, an API event inside one node, a session phase before the
// runs, and host metadata. Ids are fixed, not drawn from the process's
// counter, so the test's place in the binary does not matter.
void record_scope(epprof_profiler_t p) {
  const epprof_name_id run = name_id("model_run"), init = name_id("session_initialization");
  const epprof_name_id launch = name_id("cudaLaunchKernel");
  const char* const nodes[] = {"conv_0_kernel_time", "relu_1_kernel_time", "gemm_2_kernel_time"};
  const char* const names[] = {"conv_0", "relu_1", "gemm_2"};
  const char* const ops[] = {"Conv", "Relu", "Gemm"};
  uint64_t id = 9000;
  EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_SESSION, init, ++id));
  EPPROF_ASSERT_OK(epprof_event_end(p, id, nullptr, 0));
  for (int r = 0; r < 2; ++r) {
    const uint64_t run_id = ++id;
    EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_SESSION, run, run_id));
    for (int n = 0; n < 3; ++n) {
      const uint64_t node_id = ++id;
      EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, name_id(nodes[n]), node_id));
      if (n == 0) {
        EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_API, launch, ++id));
        EPPROF_ASSERT_OK(epprof_event_end(p, id, nullptr, 0));
      }
      epprof_arg args[4] = {{name_id("op_name"), EPPROF_ARG_STRING, {}},
                            {name_id("node_index"), EPPROF_ARG_INT64, {}},
                            {name_id("output_type_shape"), EPPROF_ARG_JSON, {}}};
      args[0].value.str = ops[n];
      args[1].value.i64 = n;
      args[2].value.str = "[{\"float\":[1,8,4,4]}]";
      // The node declared (attribution's source): with its args as one set,
      // or in a set of its own after them.
      epprof_node_desc node{};
      node.size = sizeof node;
      node.name = name_id(names[n]);
      node.op_type = name_id(ops[n]);
      node.index = uint32_t(n);
      epprof_arg set{0, EPPROF_ARG_SET, {}};
      if (n == 2) {
        EPPROF_ASSERT_OK(epprof_node_args_intern(&node, args, 3, &set.value.set));
        EPPROF_ASSERT_OK(epprof_event_end(p, node_id, &set, 1));
      } else {
        EPPROF_ASSERT_OK(epprof_node_args_intern(&node, nullptr, 0, &set.value.set));
        args[3] = set;
        EPPROF_ASSERT_OK(epprof_event_end(p, node_id, args, 4));
      }
    }
    epprof_arg run_arg{name_id("run_id"), EPPROF_ARG_INT64, {}};
    run_arg.value.i64 = r;
    EPPROF_ASSERT_OK(epprof_event_end(p, run_id, &run_arg, 1));
  }
}

TEST(GoldenTrace, ADeterministicScopeWritesTheSameBytes) {
  TempDir dir;
  const std::string path = dir.file("golden.json");
  ASSERT_EQ(setenv("EPPROF_EXAMPLE_CLOCK", "host", 1), 0);
  g_fake_now = 1'700'000'000'000'000'000;
  epprof::core::set_test_clock(fake_clock);
  epprof_plugin_t plugin{};
  EPPROF_ASSERT_OK(epprof_plugin_load(EPPROF_EXAMPLE_PLUGIN_PATH, &plugin));
  epprof_profiler_config c = config_for(path);
  c.scope_name = "golden";
  epprof_profiler_t p{};
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_ASSERT_OK(epprof_profiler_add_plugin(p, plugin));
  EPPROF_ASSERT_OK(epprof_profiler_set_metadata(p, "model", "golden.onnx"));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  record_scope(p);
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, &stats));
  EPPROF_EXPECT_OK(epprof_profiler_destroy(p));
  EPPROF_EXPECT_OK(epprof_plugin_unload(plugin));
  epprof::core::set_test_clock(nullptr);
  unsetenv("EPPROF_EXAMPLE_CLOCK");
  const uint64_t events = 1 + 2 * (1 + 3 + 1);  // the phase; per run: model_run, 3 nodes, 1 API call
  EXPECT_EQ(stats.host_events, events);
  EXPECT_EQ(stats.device_events, events);  // the example plugin: one kernel per host event
  EXPECT_EQ(stats.unattributed_device_events, 0u);

  std::string got = read_bytes(path);
  const std::string pid = std::to_string(getpid()), tid = std::to_string(syscall(SYS_gettid));
  replace_field(got, "pid", pid, "1");
  replace_field(got, "tid", tid, "1");
  replace_field(got, "host_tid", tid, "1");
  for (size_t at = got.find("thread " + tid); at != std::string::npos; at = got.find("thread " + tid, at))
    got.replace(at, 7 + tid.size(), "thread 1");

  const std::string golden_path = std::string(EPPROF_GOLDEN_DIR) + "/golden_trace.json";
  if (std::getenv("EPPROF_UPDATE_GOLDEN")) {
    std::ofstream(golden_path, std::ios::binary) << got;
    GTEST_SKIP() << "wrote " << golden_path;
  }
  const std::string want = read_bytes(golden_path);
  ASSERT_FALSE(want.empty()) << "no golden file at " << golden_path << " (EPPROF_UPDATE_GOLDEN=1 writes it)";
  if (got != want) {
    size_t at = 0;
    while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
    const size_t from = at > 120 ? at - 120 : 0;
    FAIL() << "the trace differs from " << golden_path << " at byte " << at << "\n  golden: ..."
           << want.substr(from, 240) << "\n  got:    ..." << got.substr(from, 240)
           << "\n(a change that means to change the trace: EPPROF_UPDATE_GOLDEN=1 build/bin/epprof_golden_tests)";
  }
}

}  // namespace
