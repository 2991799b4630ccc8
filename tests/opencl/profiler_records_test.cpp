// The OpenCL EP's profiler without a device: made-up command and buffer
// records reach it through the Registry, as compute hands them over, on a
// made-up device clock; through the real EP profiler slots and libepprof
// they become a trace, read back and checked against what the records say.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "epprof/epprof.h"
#include "profiler.h"
#include "records.h"
#include "support/test_util.h"

namespace epprof::opencl {
namespace {

using epprof::testing::TraceEvent;

// A device clock that runs at the host clock's rate, `offset_ns` ahead,
// and samples it exactly.
class FakeClock final : public DeviceClock {
 public:
  static constexpr int64_t kOffset = 5'000'000'000;
  ClockSample sample(HostClock host_now) override {
    ClockSample s;
    s.host_ns = host_now();
    s.device_ns = s.host_ns + kOffset;
    s.error_ns = 1;
    s.method = "fake";
    ++samples;
    return s;
  }
  const std::string& description() const override { return description_; }
  int samples = 0;

 private:
  std::string description_ = "fake device (fake platform)";
};

// A kernel that started `start_ns` and ran `dur_ns` after host time `now`,
// enqueued within [now - 100, now] on the host clock.
CommandRecord kernel(const char* name, int64_t now, int64_t start_ns, int64_t dur_ns) {
  CommandRecord r;
  r.kind = CommandRecord::Kind::Kernel;
  r.name = name;
  const auto device_now = static_cast<cl_ulong>(now + FakeClock::kOffset);
  r.queued = device_now - 50;
  r.submit = device_now - 40;
  r.start = device_now + static_cast<cl_ulong>(start_ns);
  r.end = r.start + static_cast<cl_ulong>(dur_ns);
  r.enqueue_begin = now - 100;
  r.enqueue_end = now;
  r.work_dim = 2;
  r.global = {64, 8, 0};
  return r;
}

CommandRecord copy(int64_t now, int64_t start_ns, int64_t dur_ns, size_t bytes) {
  CommandRecord r = kernel("MemcpyHtoD", now, start_ns, dur_ns);
  r.kind = CommandRecord::Kind::CopyToDevice;
  r.work_dim = 0;
  r.bytes = bytes;
  return r;
}

struct FakePlugin {
  epprof_plugin c{};
  FakeClock* clock = nullptr;
  Registry* registry = nullptr;
};

epprof_plugin* make_plugin(FakeClock* clock, Registry* registry) {
  auto* p = new FakePlugin;
  p->c.abi_version = EPPROF_EP_ABI_VERSION;
  p->c.name = "opencl";
  p->c.create_profiler = [](epprof_plugin* self, epprof_ep_profiler** out) -> epprof_status* {
    auto* fp = reinterpret_cast<FakePlugin*>(self);
    *out = create_profiler(ProfilerEnv{epprof_get_host_api(), fp->clock, fp->registry});
    return nullptr;
  };
  p->c.release = [](epprof_plugin* self) { delete reinterpret_cast<FakePlugin*>(self); };
  p->clock = clock;
  p->registry = registry;
  return &p->c;
}

class OpenClProfiler : public ::testing::Test {
 protected:
  void SetUp() override { EPPROF_ASSERT_OK(epprof_plugin_register(make_plugin(&clock, &registry), &plugin)); }
  void TearDown() override { epprof_status_release(epprof_plugin_unload(plugin)); }

  // One profiled scope with one node, "conv_kernel_time"; `issue` hands the
  // registry what the node's compute would have, given the host clock;
  // `outside` what a dispatch outside every event did, before the node.
  std::vector<TraceEvent> run_scope(const std::function<void(int64_t)>& issue, const std::function<void(int64_t)>& outside,
                                    uint64_t* node_id) {
    const std::string path = dir.file("trace.json");
    epprof_profiler_config cfg = epprof::testing::config_for(path);
    epprof_profiler_t p{};
    EPPROF_EXPECT_OK(epprof_profiler_create(&cfg, &p));
    EPPROF_EXPECT_OK(epprof_profiler_add_plugin(p, plugin));
    EPPROF_EXPECT_OK(epprof_profiler_start(p));
    EXPECT_TRUE(registry.any_active());
    if (outside) outside(epprof_clock_now_ns());
    *node_id = epprof_correlation_id_next();
    EPPROF_EXPECT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, epprof::testing::name_id("conv_kernel_time"), *node_id));
    issue(epprof_clock_now_ns());
    EPPROF_EXPECT_OK(epprof_event_end(p, *node_id, nullptr, 0));
    epprof_trace_stats stats{};
    stats.size = sizeof stats;
    EPPROF_EXPECT_OK(epprof_profiler_stop(p, &stats));
    EXPECT_FALSE(registry.any_active()) << "a stopped profiler takes no more records";
    EPPROF_EXPECT_OK(epprof_profiler_destroy(p));
    return epprof::testing::read_trace(path);
  }

  FakeClock clock;
  Registry registry;
  epprof_plugin_t plugin{};
  epprof::testing::TempDir dir;
};

TEST_F(OpenClProfiler, CommandsReachTheTraceOnTheHostClockAttributedToTheirNode) {
  uint64_t id = 0;
  int64_t now = 0;
  const auto trace = run_scope(
      [&](int64_t t) {
        now = t;
        registry.record({copy(t, 0, 1000, 4096), kernel("conv2d", t, 2000, 3000)},
                        {MemoryRecord{true, 0xbeef, 4096, t + 10}, MemoryRecord{false, 0xbeef, 0, t + 20}});
      },
      nullptr, &id);
  const TraceEvent* node = nullptr;
  const TraceEvent* conv = nullptr;
  const TraceEvent* memcpy = nullptr;
  for (const auto& e : trace) {
    if (e.name == "conv_kernel_time") node = &e;
    if (e.cat == "Kernel") conv = &e;
    if (e.cat == "Memcpy") memcpy = &e;
  }
  ASSERT_NE(node, nullptr);
  ASSERT_NE(conv, nullptr);
  ASSERT_NE(memcpy, nullptr);
  EXPECT_EQ(conv->name, "conv2d");
  EXPECT_EQ(conv->arg("correlation_id"), std::to_string(id));
  EXPECT_EQ(conv->arg("parent_name"), "conv_kernel_time");
  EXPECT_EQ(conv->arg("global_work_size"), "[64,8]");
  EXPECT_EQ(conv->arg("queued_to_start_ns"), "2050");
  EXPECT_EQ(memcpy->arg("bytes"), "4096");
  EXPECT_EQ(memcpy->arg("direction"), "HtoD");
  EXPECT_EQ(memcpy->arg("correlation_id"), std::to_string(id));
  // On a clock with neither drift nor error the device times convert
  // exactly: the kernel starts 2 µs after `now`, the copy at `now`.
  EXPECT_NEAR(conv->ts - memcpy->ts, 2.0, 1e-3);
  EXPECT_NEAR(conv->dur, 3.0, 1e-3);
  EXPECT_NEAR(memcpy->dur, 1.0, 1e-3);
  // The buffer: allocated and freed inside the node.
  EXPECT_EQ(node->arg("mem_allocated_bytes"), "4096");
  EXPECT_EQ(node->arg("mem_freed_bytes"), "4096");
  EXPECT_EQ(clock.samples, 2) << "calibrated at start and at end";

  const auto meta = epprof::testing::plugin_metadata(trace, "opencl");
  EXPECT_EQ(meta.at("device"), "fake device (fake platform)");
  EXPECT_EQ(meta.at("clock_calibration"), "fake");
  EXPECT_EQ(meta.at("device_commands"), "2");
  EXPECT_EQ(meta.at("clock_anchored_commands"), "2");
  EXPECT_EQ(meta.at("device_commands_outside_scope"), "0");
}

// Commands a thread issues outside every event of the scope (another
// scope's run) are not the scope's: left out, and counted.
TEST_F(OpenClProfiler, CommandsOutsideEveryEventAreLeftOutAndCounted) {
  uint64_t id = 0;
  const auto trace = run_scope([&](int64_t t) { registry.record({kernel("mine", t, 0, 500)}, {}); },
                               [&](int64_t t) {
                                 registry.record({kernel("stray", t, 0, 10), kernel("stray", t, 20, 10)},
                                                 {MemoryRecord{true, 1, 64, t}});
                               },
                               &id);
  size_t kernels = 0, memory = 0;
  for (const auto& e : trace) {
    if (e.cat == "Kernel") {
      ++kernels;
      EXPECT_EQ(e.name, "mine");
    }
    if (e.ph == "C" && e.name.rfind("mem_in_use", 0) == 0) ++memory;
  }
  EXPECT_EQ(kernels, 1u);
  EXPECT_EQ(memory, 0u);
  const auto meta = epprof::testing::plugin_metadata(trace, "opencl");
  EXPECT_EQ(meta.at("device_commands"), "1");
  EXPECT_EQ(meta.at("device_commands_outside_scope"), "2");
}

// No active profiler: the registry takes nothing and says so cheaply.
TEST(OpenClRegistry, WithoutAProfilerRecordsGoNowhere) {
  Registry r;
  EXPECT_FALSE(r.any_active());
  r.record({kernel("k", 0, 0, 1)}, {});
  EXPECT_FALSE(r.any_active());
}

}  // namespace
}  // namespace epprof::opencl
