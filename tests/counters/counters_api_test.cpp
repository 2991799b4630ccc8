// The counters C API: registry, configurations, pass planning on the fake
// PMU, counting contexts on real perf software events, derived counters.
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "epprof/epprof.h"

namespace {

// Takes ownership of a status; returns its code and keeps the message.
struct St {
  epprof_status_code code;
  std::string message;
};
St take(epprof_status* s) {
  St out{epprof_status_get_code(s), epprof_status_get_message(s)};
  epprof_status_release(s);
  return out;
}
#define EXPECT_OK(expr)                                     \
  do {                                                      \
    St st_ = take(expr);                                    \
    EXPECT_EQ(st_.code, EPPROF_OK) << st_.message;          \
  } while (0)
#define ASSERT_OK(expr)                                     \
  do {                                                      \
    St st_ = take(expr);                                    \
    ASSERT_EQ(st_.code, EPPROF_OK) << st_.message;          \
  } while (0)

epprof_counter_info info_struct() {
  epprof_counter_info info;
  std::memset(&info, 0, sizeof info);
  info.size = sizeof info;
  return info;
}

volatile uint64_t g_sink;
void busy(uint64_t iterations) {
  uint64_t x = 1;
  for (uint64_t i = 0; i < iterations; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  g_sink = x;
}

struct Config {
  epprof_counter_config_t handle{0};
  ~Config() {
    if (handle.handle) epprof_status_release(epprof_counter_config_destroy(handle));
  }
};
struct Ctx {
  epprof_counting_context_t handle{0};
  ~Ctx() {
    if (handle.handle) epprof_status_release(epprof_counting_context_destroy(handle));
  }
};

St create(const char* device, std::vector<const char*> names, Config* out) {
  return take(epprof_counter_config_create(device, names.data(), names.size(), &out->handle));
}

size_t num_counters(epprof_counter_config_t c) {
  size_t n = 0;
  EXPECT_OK(epprof_counter_config_counter_count(c, &n));
  return n;
}

std::string counter_name(epprof_counter_config_t c, size_t i) {
  epprof_counter_info info = info_struct();
  EXPECT_OK(epprof_counter_config_get_counter(c, i, &info, nullptr));
  return info.name ? info.name : "";
}

std::vector<size_t> pass_indices(epprof_counter_config_t c, uint32_t pass) {
  size_t count = 0;
  EXPECT_OK(epprof_counter_config_get_pass(c, pass, nullptr, 0, &count));
  std::vector<size_t> idx(count);
  size_t again = 0;
  EXPECT_OK(epprof_counter_config_get_pass(c, pass, idx.data(), idx.size(), &again));
  EXPECT_EQ(again, count);
  return idx;
}

// ---- Registry ----

TEST(CounterRegistry, ListsCpuDeviceWithDocumentedCounters) {
  size_t devices = 0;
  ASSERT_OK(epprof_counter_device_count(&devices));
  ASSERT_GE(devices, 1u);
  const char* first = nullptr;
  ASSERT_OK(epprof_counter_device_name(0, &first));
  EXPECT_STREQ(first, "cpu");

  size_t n = 0;
  ASSERT_OK(epprof_counter_count("cpu", &n));
  ASSERT_GT(n, 10u);
  bool saw_software = false, saw_derived = false, saw_hardware = false;
  for (size_t i = 0; i < n; ++i) {
    epprof_counter_info info = info_struct();
    ASSERT_OK(epprof_counter_get_info("cpu", i, &info));
    EXPECT_GT(std::strlen(info.name), 0u);
    EXPECT_GT(std::strlen(info.description), 0u) << info.name;
    EXPECT_GT(std::strlen(info.unit), 0u) << info.name;
    EXPECT_STREQ(info.device, "cpu");
    // Supported iff there is no reason; an unsupported counter always says why.
    EXPECT_EQ(info.supported == 1, std::strlen(info.unsupported_reason) == 0) << info.name;
    saw_software |= info.kind == EPPROF_COUNTER_SOFTWARE;
    saw_hardware |= info.kind == EPPROF_COUNTER_HARDWARE;
    saw_derived |= info.kind == EPPROF_COUNTER_DERIVED;
  }
  EXPECT_TRUE(saw_software && saw_hardware && saw_derived);

  for (const char* sw : {"task-clock", "cpu-clock", "context-switches", "cpu-migrations", "page-faults",
                         "minor-faults", "major-faults", "alignment-faults", "emulation-faults"}) {
    epprof_counter_info info = info_struct();
    ASSERT_OK(epprof_counter_find("cpu", sw, &info));
    EXPECT_EQ(info.kind, uint32_t(EPPROF_COUNTER_SOFTWARE)) << sw;
    EXPECT_EQ(info.supported, 1u) << sw << ": " << info.unsupported_reason;
  }
}

TEST(CounterRegistry, ErrorCases) {
  size_t n = 0;
  const char* name = nullptr;
  epprof_counter_info info = info_struct();
  EXPECT_EQ(take(epprof_counter_device_count(nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_device_name(0, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_device_name(100000, &name)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_count(nullptr, &n)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_count("cpu", nullptr)).code, EPPROF_INVALID_ARGUMENT);
  St st = take(epprof_counter_count("gpu7", &n));
  EXPECT_EQ(st.code, EPPROF_NOT_FOUND);
  EXPECT_NE(st.message.find("'gpu7'"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("cpu"), std::string::npos) << st.message;
  ASSERT_OK(epprof_counter_count("cpu", &n));
  EXPECT_EQ(take(epprof_counter_get_info("cpu", n, &info)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_get_info("cpu", 0, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  epprof_counter_info unsized = info_struct();
  unsized.size = 0;
  EXPECT_EQ(take(epprof_counter_get_info("cpu", 0, &unsized)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_find("cpu", nullptr, &info)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_find("nope", "task-clock", &info)).code, EPPROF_NOT_FOUND);
}

TEST(CounterRegistry, SmallerInfoSizeIsRespected) {
  // A caller built against a header whose struct ends after `description`.
  struct {
    epprof_counter_info info;
    char guard[8];
  } buf;
  std::memset(&buf, 0x5a, sizeof buf);
  buf.info.size = offsetof(epprof_counter_info, unit);
  ASSERT_OK(epprof_counter_find("cpu", "task-clock", &buf.info));
  EXPECT_STREQ(buf.info.name, "task-clock");
  unsigned char expect[sizeof(void*)];
  std::memset(expect, 0x5a, sizeof expect);
  EXPECT_EQ(std::memcmp(&buf.info.unit, expect, sizeof expect), 0) << "wrote past the caller's size";
}

TEST(CounterRegistry, UnknownNameNamesTheClosestKnownNames) {
  epprof_counter_info info = info_struct();
  St st = take(epprof_counter_find("cpu", "task-clk", &info));
  EXPECT_EQ(st.code, EPPROF_NOT_FOUND);
  EXPECT_NE(st.message.find("'task-clk'"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("task-clock"), std::string::npos) << st.message;

  Config c;
  st = create("cpu", {"task-clock", "cache-mises"}, &c);
  EXPECT_EQ(st.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(c.handle.handle, 0u);
  EXPECT_NE(st.message.find("'cache-mises'"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("cache-misses"), std::string::npos) << st.message;
  // The closest name comes first.
  const size_t did = st.message.find("did you mean: ");
  ASSERT_NE(did, std::string::npos) << st.message;
  EXPECT_EQ(st.message.compare(did + 14, 12, "cache-misses"), 0) << st.message;

  st = create("cpu", {"page-fualts"}, &c);
  EXPECT_EQ(st.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(st.message.find("did you mean: page-faults"), std::string::npos) << st.message;
}

// Hardware counters: unsupported with a reason here (no PMU in the VM);
// real, nonzero values where a PMU exists. Never zeros standing in for
// "unsupported".
TEST(CounterRegistry, HardwareCountersAreUnsupportedWithReasonOrCountForReal) {
  for (const char* hw : {"cycles", "instructions", "cache-references", "cache-misses", "branch-instructions",
                         "branch-misses"}) {
    SCOPED_TRACE(hw);
    epprof_counter_info info = info_struct();
    ASSERT_OK(epprof_counter_find("cpu", hw, &info));
    EXPECT_EQ(info.kind, uint32_t(EPPROF_COUNTER_HARDWARE));
    Config c;
    St st = create("cpu", {hw}, &c);
    if (!info.supported) {
      EXPECT_NE(std::string(info.unsupported_reason).find("unsupported on this machine"), std::string::npos)
          << info.unsupported_reason;
      EXPECT_NE(std::string(info.unsupported_reason).find("perf_event_open failed"), std::string::npos)
          << info.unsupported_reason;
      EXPECT_EQ(st.code, EPPROF_UNSUPPORTED);
      EXPECT_NE(st.message.find(hw), std::string::npos) << st.message;
      EXPECT_NE(st.message.find(info.unsupported_reason), std::string::npos) << st.message;
      EXPECT_EQ(c.handle.handle, 0u);
      continue;
    }
    ASSERT_TRUE(st.code == EPPROF_OK || st.code == EPPROF_MULTIPASS) << st.message;
    Ctx ctx;
    ASSERT_OK(epprof_counting_context_create(c.handle, &ctx.handle));
    ASSERT_OK(epprof_counting_context_start(ctx.handle, 0));
    busy(2000000);
    ASSERT_OK(epprof_counting_context_stop(ctx.handle));
    epprof_counter_value v[1];
    ASSERT_OK(epprof_counting_context_read(ctx.handle, nullptr, v, 1));
    if (std::strcmp(hw, "cycles") == 0 || std::strcmp(hw, "instructions") == 0 ||
        std::strcmp(hw, "branch-instructions") == 0) {
      ASSERT_TRUE(v[0].flags & EPPROF_COUNTER_VALUE_VALID) << v[0].flags;
      EXPECT_GT(v[0].raw, 1000000u);
    }
  }
  // ipc follows: supported exactly when instructions and cycles are.
  epprof_counter_info ipc = info_struct(), ins = info_struct(), cyc = info_struct();
  ASSERT_OK(epprof_counter_find("cpu", "ipc", &ipc));
  ASSERT_OK(epprof_counter_find("cpu", "instructions", &ins));
  ASSERT_OK(epprof_counter_find("cpu", "cycles", &cyc));
  EXPECT_EQ(ipc.supported, ins.supported && cyc.supported);
  if (!ipc.supported) {
    EXPECT_GT(std::strlen(ipc.unsupported_reason), 0u);
  }
}

TEST(CounterRegistry, PmuNativeNamesResolveThroughLibpfmOrAreExplained) {
  // A libpfm4 name for a perf generic software event: resolvable wherever
  // libpfm4 is built in, PMU or not; it counts like task-clock.
  epprof_counter_info info = info_struct();
  St st = take(epprof_counter_find("cpu", "PERF_COUNT_SW_TASK_CLOCK", &info));
  if (st.code == EPPROF_NOT_FOUND) {
    EXPECT_NE(st.message.find("libpfm4"), std::string::npos) << st.message;
    GTEST_SKIP() << "epprof built without libpfm4: " << st.message;
  }
  ASSERT_EQ(st.code, EPPROF_OK) << st.message;
  EXPECT_STREQ(info.backend, "libpfm4");
  EXPECT_EQ(info.kind, uint32_t(EPPROF_COUNTER_SOFTWARE));
  ASSERT_EQ(info.supported, 1u) << info.unsupported_reason;
  Config c;
  ASSERT_EQ(create("cpu", {"PERF_COUNT_SW_TASK_CLOCK"}, &c).code, EPPROF_OK);
  Ctx ctx;
  ASSERT_OK(epprof_counting_context_create(c.handle, &ctx.handle));
  ASSERT_OK(epprof_counting_context_start(ctx.handle, 0));
  busy(1000000);
  ASSERT_OK(epprof_counting_context_stop(ctx.handle));
  epprof_counter_value v[1];
  ASSERT_OK(epprof_counting_context_read(ctx.handle, nullptr, v, 1));
  EXPECT_TRUE(v[0].flags & EPPROF_COUNTER_VALUE_VALID);
  EXPECT_GT(v[0].raw, 0u);
}

// ---- Configurations ----

TEST(CounterConfig, CreateErrorCases) {
  Config c;
  const char* names[] = {"task-clock", "task-clock"};
  const char* with_null[] = {"task-clock", nullptr};
  EXPECT_EQ(take(epprof_counter_config_create(nullptr, names, 1, &c.handle)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_create("cpu", names, 1, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_create("cpu", nullptr, 1, &c.handle)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_create("cpu", names, 0, &c.handle)).code, EPPROF_INVALID_ARGUMENT);
  St st = take(epprof_counter_config_create("cpu", with_null, 2, &c.handle));
  EXPECT_EQ(st.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(st.message.find("names[1]"), std::string::npos) << st.message;
  st = take(epprof_counter_config_create("cpu", names, 2, &c.handle));
  EXPECT_EQ(st.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(st.message.find("named twice"), std::string::npos) << st.message;
  st = take(epprof_counter_config_create("tpu", names, 1, &c.handle));
  EXPECT_EQ(st.code, EPPROF_NOT_FOUND);
  EXPECT_EQ(c.handle.handle, 0u) << "a failed create must leave *out alone";
}

// The spellings from before counts had one naming rule stay exported for
// binaries built against 0.1, and answer as the new ones do.
TEST(CounterConfig, DeprecatedCountSpellingsAnswerAsTheNewOnes) {
  Config c;
  ASSERT_EQ(create("cpu", {"task-clock", "page-faults"}, &c).code, EPPROF_OK);
  size_t n_old = 0, n_new = 0;
  uint32_t p_old = 0, p_new = 0;
  ASSERT_OK(epprof_counter_config_get_num_counters(c.handle, &n_old));
  ASSERT_OK(epprof_counter_config_counter_count(c.handle, &n_new));
  ASSERT_OK(epprof_counter_config_get_num_passes(c.handle, &p_old));
  ASSERT_OK(epprof_counter_config_pass_count(c.handle, &p_new));
  EXPECT_EQ(n_old, 2u);
  EXPECT_EQ(n_old, n_new);
  EXPECT_EQ(p_old, p_new);
  EXPECT_EQ(take(epprof_counter_config_get_num_counters(c.handle, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  const epprof_counter_config_t stale = c.handle;
  ASSERT_OK(epprof_counter_config_destroy(c.handle));
  c.handle.handle = 0;
  EXPECT_EQ(take(epprof_counter_config_get_num_passes(stale, &p_old)).code, EPPROF_NOT_FOUND);
}

TEST(CounterConfig, QueriesAndStaleHandles) {
  Config c;
  ASSERT_EQ(create("cpu", {"task-clock", "page-faults", "duration_ns"}, &c).code, EPPROF_OK);
  EXPECT_EQ(num_counters(c.handle), 3u);
  EXPECT_EQ(counter_name(c.handle, 0), "task-clock");
  EXPECT_EQ(counter_name(c.handle, 2), "duration_ns");
  uint32_t passes = 0, pass = 99;
  ASSERT_OK(epprof_counter_config_pass_count(c.handle, &passes));
  EXPECT_EQ(passes, 1u);
  ASSERT_OK(epprof_counter_config_get_counter(c.handle, 1, nullptr, &pass));
  EXPECT_EQ(pass, 0u);
  EXPECT_EQ(pass_indices(c.handle, 0), (std::vector<size_t>{0, 1, 2}));
  size_t one[1] = {99}, count = 0;
  ASSERT_OK(epprof_counter_config_get_pass(c.handle, 0, one, 1, &count));
  EXPECT_EQ(count, 3u);  // the total, even when capacity is smaller
  EXPECT_EQ(one[0], 0u);

  size_t n = 0;
  EXPECT_EQ(take(epprof_counter_config_counter_count(c.handle, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_get_counter(c.handle, 3, nullptr, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_pass_count(c.handle, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_get_pass(c.handle, 1, nullptr, 0, &count)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_get_pass(c.handle, 0, nullptr, 4, &count)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counter_config_get_pass(c.handle, 0, nullptr, 0, nullptr)).code, EPPROF_INVALID_ARGUMENT);

  const epprof_counter_config_t stale = c.handle;
  ASSERT_OK(epprof_counter_config_destroy(c.handle));
  c.handle.handle = 0;
  EXPECT_EQ(take(epprof_counter_config_destroy(stale)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counter_config_counter_count(stale, &n)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counter_config_get_counter(stale, 0, nullptr, nullptr)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counter_config_pass_count(stale, &passes)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counter_config_get_pass(stale, 0, nullptr, 0, &count)).code, EPPROF_NOT_FOUND);
  epprof_counting_context_t ctx{0};
  EXPECT_EQ(take(epprof_counting_context_create(stale, &ctx)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counter_config_destroy(epprof_counter_config_t{0})).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counter_config_destroy(epprof_counter_config_t{0x12345})).code, EPPROF_NOT_FOUND);
}

TEST(CounterConfig, RatioBringsItsInputs) {
  Config c;
  ASSERT_EQ(create("cpu", {"flop_per_s"}, &c).code, EPPROF_OK);
  ASSERT_EQ(num_counters(c.handle), 3u);
  EXPECT_EQ(counter_name(c.handle, 0), "flop_per_s");
  EXPECT_EQ(counter_name(c.handle, 1), "flops");
  EXPECT_EQ(counter_name(c.handle, 2), "duration_ns");
  Config d;  // inputs already named are not added twice
  ASSERT_EQ(create("cpu", {"duration_ns", "flop_per_s", "flops"}, &d).code, EPPROF_OK);
  EXPECT_EQ(num_counters(d.handle), 3u);
}

TEST(CounterStatus, MultipassHasItsName) {
  EXPECT_STREQ(epprof_status_code_name(EPPROF_MULTIPASS), "MULTIPASS");
  EXPECT_NE(EPPROF_MULTIPASS, EPPROF_UNSUPPORTED);
}

// ---- The fake 4-counter PMU: pass planning ----

class FakePmu : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(epprof_counter_register_fake_device()); }
};

TEST_F(FakePmu, IsRegisteredOnceWithFourProgrammableCounters) {
  ASSERT_OK(epprof_counter_register_fake_device());  // idempotent
  size_t devices = 0, fakes = 0;
  ASSERT_OK(epprof_counter_device_count(&devices));
  for (size_t i = 0; i < devices; ++i) {
    const char* name = nullptr;
    ASSERT_OK(epprof_counter_device_name(i, &name));
    fakes += std::strcmp(name, "fake-pmu") == 0;
  }
  EXPECT_EQ(fakes, 1u);
  epprof_counter_info info = info_struct();
  ASSERT_OK(epprof_counter_find("fake-pmu", "ipc", &info));
  EXPECT_EQ(info.supported, 1u) << info.unsupported_reason;
  EXPECT_EQ(take(epprof_counter_find("fake-pmu", "task-clock", &info)).code, EPPROF_NOT_FOUND);
}

TEST_F(FakePmu, SixProgrammableEventsNeedTwoPasses) {
  Config c;
  St st = create("fake-pmu",
                 {"cache-references", "cache-misses", "branch-instructions", "branch-misses", "l1d-loads",
                  "l1d-load-misses"},
                 &c);
  ASSERT_EQ(st.code, EPPROF_MULTIPASS) << st.message;
  ASSERT_NE(c.handle.handle, 0u) << "MULTIPASS still creates the configuration";
  EXPECT_NE(st.message.find("2 passes"), std::string::npos) << st.message;
  uint32_t passes = 0;
  ASSERT_OK(epprof_counter_config_pass_count(c.handle, &passes));
  EXPECT_EQ(passes, 2u);
  EXPECT_EQ(pass_indices(c.handle, 0), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(pass_indices(c.handle, 1), (std::vector<size_t>{4, 5}));
}

TEST_F(FakePmu, FixedCountersTakeNoSlot) {
  Config c;
  St st = create("fake-pmu",
                 {"cycles", "cache-references", "instructions", "cache-misses", "branch-instructions",
                  "branch-misses"},
                 &c);
  ASSERT_EQ(st.code, EPPROF_OK) << st.message;
  uint32_t passes = 0;
  ASSERT_OK(epprof_counter_config_pass_count(c.handle, &passes));
  EXPECT_EQ(passes, 1u);
  Config nine;
  st = create("fake-pmu",
              {"cache-references", "cache-misses", "branch-instructions", "branch-misses", "l1d-loads",
               "l1d-load-misses", "llc-loads", "llc-load-misses", "dtlb-load-misses", "cycles"},
              &nine);
  ASSERT_EQ(st.code, EPPROF_MULTIPASS) << st.message;
  ASSERT_OK(epprof_counter_config_pass_count(nine.handle, &passes));
  EXPECT_EQ(passes, 3u);
  EXPECT_EQ(pass_indices(nine.handle, 0), (std::vector<size_t>{0, 1, 2, 3, 9}));
  EXPECT_EQ(pass_indices(nine.handle, 1), (std::vector<size_t>{4, 5, 6, 7}));
  EXPECT_EQ(pass_indices(nine.handle, 2), (std::vector<size_t>{8}));
}

// Runs one interval of `pass` and returns the values.
std::vector<epprof_counter_value> one_interval(epprof_counting_context_t ctx, size_t n, uint32_t pass,
                                               const epprof_dispatch_measures* m = nullptr) {
  std::vector<epprof_counter_value> v(n);
  EXPECT_OK(epprof_counting_context_start(ctx, pass));
  EXPECT_OK(epprof_counting_context_stop(ctx));
  EXPECT_OK(epprof_counting_context_read(ctx, m, v.data(), v.size()));
  return v;
}

TEST_F(FakePmu, PassesReplayedGiveOneValuePerCounterAndMultiplexEstimatesMatch) {
  Config c;
  ASSERT_EQ(create("fake-pmu",
                   {"cache-references", "cache-misses", "branch-instructions", "branch-misses", "l1d-loads",
                    "l1d-load-misses"},
                   &c)
                .code,
            EPPROF_MULTIPASS);
  Ctx ctx;
  ASSERT_OK(epprof_counting_context_create(c.handle, &ctx.handle));
  const size_t n = num_counters(c.handle);
  std::vector<double> per_pass(n, -1);
  for (uint32_t p = 0; p < 2; ++p) {
    auto v = one_interval(ctx.handle, n, p);
    for (size_t i = 0; i < n; ++i) {
      uint32_t cp = 0;
      ASSERT_OK(epprof_counter_config_get_counter(c.handle, i, nullptr, &cp));
      if (cp == p) {
        ASSERT_EQ(v[i].flags, EPPROF_COUNTER_VALUE_VALID) << i;
        EXPECT_GT(v[i].raw, 0u);
        EXPECT_EQ(v[i].time_enabled_ns, v[i].time_running_ns);
        per_pass[i] = v[i].value;
      } else {
        EXPECT_EQ(v[i].flags, EPPROF_COUNTER_VALUE_NOT_IN_PASS) << i;
        EXPECT_EQ(v[i].value, 0.0);
      }
    }
  }
  // Every counter got its value from exactly one pass; replaying gives the same.
  for (size_t i = 0; i < n; ++i) ASSERT_GE(per_pass[i], 0) << i;
  auto again = one_interval(ctx.handle, n, 1);
  EXPECT_EQ(again[4].value, per_pass[4]);

  // Multiplexed: both groups at once, each runs half the time; the scaled
  // estimate equals the single-pass value.
  auto mux = one_interval(ctx.handle, n, EPPROF_COUNTER_PASS_MULTIPLEX);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(mux[i].flags, EPPROF_COUNTER_VALUE_VALID | EPPROF_COUNTER_VALUE_SCALED) << i;
    EXPECT_EQ(mux[i].time_running_ns * 2, mux[i].time_enabled_ns);
    EXPECT_DOUBLE_EQ(mux[i].value, double(mux[i].raw) * double(mux[i].time_enabled_ns) / mux[i].time_running_ns);
    EXPECT_DOUBLE_EQ(mux[i].value, per_pass[i]) << i;
    EXPECT_EQ(mux[i].pass, EPPROF_COUNTER_PASS_MULTIPLEX);
  }
}

TEST_F(FakePmu, IpcKeepsItsInputsInOnePassAndIsTheirRatio) {
  Config c;
  St st = create("fake-pmu", {"cache-references", "cache-misses", "branch-instructions", "ipc"}, &c);
  ASSERT_EQ(st.code, EPPROF_OK) << st.message;
  ASSERT_EQ(num_counters(c.handle), 6u);
  EXPECT_EQ(counter_name(c.handle, 4), "instructions");
  EXPECT_EQ(counter_name(c.handle, 5), "cycles");
  Ctx ctx;
  ASSERT_OK(epprof_counting_context_create(c.handle, &ctx.handle));
  auto v = one_interval(ctx.handle, 6, 0);
  ASSERT_TRUE(v[3].flags & EPPROF_COUNTER_VALUE_VALID);
  EXPECT_DOUBLE_EQ(v[3].value, v[4].value / v[5].value);
}

// ---- Counting contexts on real software events ----

TEST(CountingContext, SoftwareGroupOnBusyLoop) {
  Config c;
  ASSERT_EQ(create("cpu", {"task-clock", "context-switches", "page-faults", "duration_ns"}, &c).code, EPPROF_OK);
  Ctx outer_ctx, ctx;
  Config outer;
  ASSERT_EQ(create("cpu", {"task-clock"}, &outer).code, EPPROF_OK);
  ASSERT_OK(epprof_counting_context_create(outer.handle, &outer_ctx.handle));
  ASSERT_OK(epprof_counting_context_create(c.handle, &ctx.handle));

  ASSERT_OK(epprof_counting_context_start(outer_ctx.handle, 0));
  double inner_sum = 0;
  for (int round = 1; round <= 4; ++round) {
    // Touch fresh pages inside the interval: each is a page fault.
    constexpr size_t kPages = 64;
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    void* mem = mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    madvise(mem, kPages * page, MADV_NOHUGEPAGE);
    ASSERT_OK(epprof_counting_context_start(ctx.handle, 0));
    busy(uint64_t(round) * 500000);
    for (size_t i = 0; i < kPages; ++i) static_cast<volatile char*>(mem)[i * page] = 1;
    ASSERT_OK(epprof_counting_context_stop(ctx.handle));
    munmap(mem, kPages * page);
    epprof_counter_value v[4];
    ASSERT_OK(epprof_counting_context_read(ctx.handle, nullptr, v, 4));
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(v[i].flags & EPPROF_COUNTER_VALUE_VALID) << i;
    EXPECT_GT(v[0].raw, 0u);
    EXPECT_GT(v[0].time_enabled_ns, 0u);
    EXPECT_EQ(v[0].time_enabled_ns, v[0].time_running_ns) << "a software group is never multiplexed";
    EXPECT_GE(v[2].raw, kPages);
    // The thread cannot run longer than the wall time of the interval
    // (duration_ns is taken inside the two reads). Slack: 50 us, and 5% for
    // a guest kernel's task clock, which a fresh-clone CI run on a loaded VM
    // saw run 2.7% ahead of the wall clock (1.993 ms in 1.941 ms).
    EXPECT_LE(v[0].value, v[3].value * 1.05 + 50000.0);
    EXPECT_GT(v[3].value, 0.0);
    inner_sum += v[0].value;
  }
  ASSERT_OK(epprof_counting_context_stop(outer_ctx.handle));
  epprof_counter_value total[1];
  ASSERT_OK(epprof_counting_context_read(outer_ctx.handle, nullptr, total, 1));
  // Monotonic: the enclosing interval counted at least what the inner ones did.
  EXPECT_GE(total[0].value, inner_sum);
}

TEST(CountingContext, ErrorCases) {
  Config c;
  ASSERT_EQ(create("cpu", {"task-clock", "flops"}, &c).code, EPPROF_OK);
  Ctx ctx;
  EXPECT_EQ(take(epprof_counting_context_create(c.handle, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  ASSERT_OK(epprof_counting_context_create(c.handle, &ctx.handle));
  epprof_counter_value v[2];
  // Nothing measured yet.
  EXPECT_EQ(take(epprof_counting_context_stop(ctx.handle)).code, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(take(epprof_counting_context_read(ctx.handle, nullptr, v, 2)).code, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(take(epprof_counting_context_start(ctx.handle, 1)).code, EPPROF_INVALID_ARGUMENT);
  ASSERT_OK(epprof_counting_context_start(ctx.handle, 0));
  EXPECT_EQ(take(epprof_counting_context_start(ctx.handle, 0)).code, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(take(epprof_counting_context_read(ctx.handle, nullptr, v, 2)).code, EPPROF_FAILED_PRECONDITION);
  // Off the owner thread.
  St off_start, off_stop, off_read;
  std::thread([&] {
    off_start = take(epprof_counting_context_start(ctx.handle, 0));
    off_stop = take(epprof_counting_context_stop(ctx.handle));
    off_read = take(epprof_counting_context_read(ctx.handle, nullptr, v, 2));
  }).join();
  EXPECT_EQ(off_start.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(off_start.message.find("thread"), std::string::npos) << off_start.message;
  EXPECT_EQ(off_stop.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(off_read.code, EPPROF_FAILED_PRECONDITION);
  ASSERT_OK(epprof_counting_context_stop(ctx.handle));
  EXPECT_EQ(take(epprof_counting_context_read(ctx.handle, nullptr, nullptr, 2)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_counting_context_read(ctx.handle, nullptr, v, 1)).code, EPPROF_INVALID_ARGUMENT);
  epprof_dispatch_measures bad{};
  EXPECT_EQ(take(epprof_counting_context_read(ctx.handle, &bad, v, 2)).code, EPPROF_INVALID_ARGUMENT);
  ASSERT_OK(epprof_counting_context_read(ctx.handle, nullptr, v, 2));
  EXPECT_EQ(v[1].flags, EPPROF_COUNTER_VALUE_NO_INPUT) << "no flops measure given: not a zero";
  EXPECT_EQ(v[1].value, 0.0);

  // The config can go first; the context keeps working.
  ASSERT_OK(epprof_counter_config_destroy(c.handle));
  c.handle.handle = 0;
  ASSERT_OK(epprof_counting_context_start(ctx.handle, 0));
  ASSERT_OK(epprof_counting_context_stop(ctx.handle));

  const epprof_counting_context_t stale = ctx.handle;
  ASSERT_OK(epprof_counting_context_destroy(ctx.handle));
  ctx.handle.handle = 0;
  const auto destroyed = take(epprof_counting_context_destroy(stale));
  EXPECT_EQ(destroyed.code, EPPROF_NOT_FOUND);
  EXPECT_EQ(destroyed.message, "epprof_counting_context_destroy: unknown or destroyed counting context handle");
  const auto started = take(epprof_counting_context_start(stale, 0));
  EXPECT_EQ(started.code, EPPROF_NOT_FOUND);
  EXPECT_EQ(started.message, "epprof_counting_context_start: unknown or destroyed counting context handle");
  EXPECT_EQ(take(epprof_counting_context_stop(stale)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counting_context_read(stale, nullptr, v, 2)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_counting_context_start(epprof_counting_context_t{0}, 0)).code, EPPROF_NOT_FOUND);
}

TEST(CountingContext, DerivedCountersFromHostMeasures) {
  Config c;
  ASSERT_EQ(create("cpu", {"flop_per_s", "bytes_per_s", "flop_per_byte"}, &c).code, EPPROF_OK);
  const size_t n = num_counters(c.handle);
  ASSERT_EQ(n, 6u);  // + flops, duration_ns, bytes
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back(counter_name(c.handle, i));
  auto at = [&](const char* name) { return size_t(std::find(names.begin(), names.end(), name) - names.begin()); };
  Ctx ctx;
  ASSERT_OK(epprof_counting_context_create(c.handle, &ctx.handle));

  epprof_dispatch_measures m{};
  m.size = sizeof m;
  m.known = EPPROF_MEASURE_FLOPS | EPPROF_MEASURE_BYTES | EPPROF_MEASURE_DURATION;
  m.flops = 3.0e6;
  m.bytes = 1.5e6;
  m.duration_ns = 2000;
  auto v = one_interval(ctx.handle, n, 0, &m);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(v[i].flags, EPPROF_COUNTER_VALUE_VALID) << names[i];
  EXPECT_EQ(v[at("flops")].value, m.flops);
  EXPECT_EQ(v[at("bytes")].value, m.bytes);
  EXPECT_EQ(v[at("duration_ns")].value, 2000.0);
  EXPECT_DOUBLE_EQ(v[at("flop_per_s")].value, m.flops / (m.duration_ns * 1e-9));
  EXPECT_DOUBLE_EQ(v[at("bytes_per_s")].value, m.bytes / (m.duration_ns * 1e-9));
  EXPECT_DOUBLE_EQ(v[at("flop_per_byte")].value, m.flops / m.bytes);

  // Without a duration the context's own wall time is used.
  m.known = EPPROF_MEASURE_FLOPS;
  std::vector<epprof_counter_value> w(n);
  ASSERT_OK(epprof_counting_context_start(ctx.handle, 0));
  busy(200000);
  ASSERT_OK(epprof_counting_context_stop(ctx.handle));
  ASSERT_OK(epprof_counting_context_read(ctx.handle, &m, w.data(), n));
  const double d = w[at("duration_ns")].value;
  EXPECT_GT(d, 0.0);
  EXPECT_DOUBLE_EQ(w[at("flop_per_s")].value, m.flops / d * 1e9);
  EXPECT_EQ(w[at("bytes")].flags, EPPROF_COUNTER_VALUE_NO_INPUT);
  EXPECT_EQ(w[at("bytes_per_s")].flags, EPPROF_COUNTER_VALUE_NO_INPUT);

  // A caller whose measures struct is older (ends after `known`) gets no
  // duration/flops/bytes read past its size.
  struct {
    epprof_dispatch_measures m;
  } old{};
  old.m.size = offsetof(epprof_dispatch_measures, duration_ns);
  old.m.known = EPPROF_MEASURE_FLOPS;
  old.m.flops = 5;  // beyond `size`: must be ignored
  ASSERT_OK(epprof_counting_context_read(ctx.handle, &old.m, w.data(), n));
  EXPECT_EQ(w[at("flops")].flags, EPPROF_COUNTER_VALUE_NO_INPUT);
  EXPECT_EQ(w[at("flops")].value, 0.0);
}

}  // namespace
