// Plugins seen from the host: loading and refusal, the start-offset
// formula with a synthetic EP clock, the per-thread correlation stack, and
// plugin errors that must never stop profiling or lose valid events.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <mutex>
#include <vector>

#include "support/test_util.h"

namespace {

using epprof::testing::config_for;
using epprof::testing::name_id;
using epprof::testing::read_trace;
using epprof::testing::take;
using epprof::testing::TempDir;

// ---- a synthetic plugin with a fake clock, written in C++ for the test ----

struct FakeClock {
  int64_t now = 5'000'000'000;  // the EP clock's own epoch, unrelated to the host's
};

struct FakeProfiler {
  epprof_ep_profiler base;
  FakeClock* clock;
  int64_t offset = 0, ep_start = 0;
  std::vector<uint64_t> stack;
  struct Kernel {
    uint64_t id;
    int64_t ep_begin, ep_end;
  };
  std::vector<Kernel> kernels;
  bool fail_start_event = false;
  bool fail_end_after_first = false;
  bool stray_kernels = false;
  // Kernels on the host clock instead: each inside its node, but the third
  // node's ends before the second node begins (a device clock behind the
  // host's by more than a node lasts).
  bool host_clock_kernels = false;
  std::vector<int64_t> begun_ns;  // host clock, per open node
  std::vector<int64_t> node_begins;  // host clock, every node so far
  std::vector<std::string>* seen_args = nullptr;  // "key=value" of every arg stop_event saw
  bool started = false;
  struct FakePlugin* plugin = nullptr;
};

struct FakePlugin {
  epprof_plugin base;
  FakeClock clock;
  bool fail_start_event = false;
  bool fail_end_after_first = false;
  bool stray_kernels = false;  // also report kernels whose ids have no host event
  bool host_clock_kernels = false;  // see FakeProfiler
  int released_profilers = 0;
  bool released = false;
  std::vector<std::string> seen_args;
  // host_start: the profilers have the slot, claiming `host_start_abi`.
  bool host_start_slot = false;
  uint32_t host_start_abi = EPPROF_EP_ABI_VERSION;
  int64_t host_start_ns = -1;              // what host_start was given; -1: not called
  bool host_start_after_start_profiling = false;
};

const epprof_host_api* host() { return epprof_get_host_api(); }

epprof_status* fake_host_start(epprof_ep_profiler* self, int64_t host_start_ns) {
  auto* p = reinterpret_cast<FakeProfiler*>(self);
  p->plugin->host_start_ns = host_start_ns;
  p->plugin->host_start_after_start_profiling = p->started;
  return nullptr;
}
epprof_status* fake_start_profiling(epprof_ep_profiler* self, int64_t offset) {
  auto* p = reinterpret_cast<FakeProfiler*>(self);
  p->started = true;
  p->offset = offset;
  p->ep_start = p->clock->now;
  return nullptr;
}
epprof_status* fake_start_event(epprof_ep_profiler* self, uint64_t id) {
  auto* p = reinterpret_cast<FakeProfiler*>(self);
  p->stack.push_back(id);
  p->begun_ns.push_back(epprof_clock_now_ns());
  p->node_begins.push_back(p->begun_ns.back());
  if (p->fail_start_event) return host()->status_create(EPPROF_PLUGIN_ERROR, "fake start_event failure");
  return nullptr;
}
epprof_status* fake_stop_event(epprof_ep_profiler* self, uint64_t id, const epprof_event* ev) {
  auto* p = reinterpret_cast<FakeProfiler*>(self);
  EXPECT_FALSE(p->stack.empty());
  EXPECT_EQ(p->stack.back(), id);  // properly nested
  uint64_t ev_id = 0;
  EXPECT_EQ(host()->event_get_correlation_id(ev, &ev_id), nullptr);
  EXPECT_EQ(ev_id, id);
  p->stack.pop_back();
  size_t n = 0;
  EXPECT_EQ(host()->event_arg_count(ev, &n), nullptr);
  for (size_t i = 0; i < n; ++i) {
    const char *k = nullptr, *v = nullptr;
    EXPECT_EQ(host()->event_get_arg(ev, i, &k, &v), nullptr);
    p->seen_args->push_back(std::string(k) + "=" + v);
  }
  const int64_t begun = p->begun_ns.back();
  p->begun_ns.pop_back();
  if (p->host_clock_kernels) {
    if (p->kernels.size() == 2)  // ends 4 µs before the node before it begins
      p->kernels.push_back({id, p->node_begins[1] - 5000, p->node_begins[1] - 4000});
    else
      p->kernels.push_back({id, begun, std::max(begun + 1, epprof_clock_now_ns())});
    return nullptr;
  }
  // A "kernel" of 1000 EP-clock ns that started 2000 ns ago.
  p->kernels.push_back({id, p->clock->now - 2000, p->clock->now - 1000});
  return nullptr;
}
epprof_status* fake_end_profiling(epprof_ep_profiler* self, epprof_event_sink* sink) {
  auto* p = reinterpret_cast<FakeProfiler*>(self);
  if (p->stray_kernels) {
    // An id the host never handed out, and no id at all.
    p->kernels.push_back({epprof_correlation_id_next(), p->ep_start + 10, p->ep_start + 20});
    p->kernels.push_back({0, p->ep_start + 30, p->ep_start + 40});
  }
  for (size_t i = 0; i < p->kernels.size(); ++i) {
    const auto& k = p->kernels[i];
    epprof_event* e = nullptr;
    const char* keys[] = {"stream"};
    const char* values[] = {"7"};
    const int64_t ts = p->host_clock_kernels ? k.ep_begin - p->plugin->host_start_ns  // host times
                                             : p->offset + (k.ep_begin - p->ep_start);  // the formula under test
    epprof_status* st = host()->event_create(EPPROF_CATEGORY_KERNEL, "fake_kernel", 0, 7, ts,
                                             k.ep_end - k.ep_begin, k.id, keys, values, 1, &e);
    if (st) return st;
    const epprof_event* batch[] = {e};
    st = host()->sink_append(sink, batch, 1);
    host()->event_release(e);
    if (st) return st;
    if (p->fail_end_after_first) return host()->status_create(EPPROF_PLUGIN_ERROR, "fake end failure");
  }
  host()->sink_set_metadata(sink, "clock", "fake");
  return nullptr;
}
void fake_release_profiler(epprof_ep_profiler* self) {
  auto* p = reinterpret_cast<FakeProfiler*>(self);
  delete p;
}
epprof_status* fake_create(epprof_plugin* self, epprof_ep_profiler** out) {
  auto* pl = reinterpret_cast<FakePlugin*>(self);
  auto* p = new FakeProfiler();
  p->base = {EPPROF_EP_ABI_VERSION, fake_start_profiling, fake_start_event, fake_stop_event,
             fake_end_profiling, fake_release_profiler, nullptr};
  if (pl->host_start_slot) {
    p->base.abi_version = pl->host_start_abi;
    p->base.host_start = fake_host_start;
  }
  p->plugin = pl;
  p->clock = &pl->clock;
  p->fail_start_event = pl->fail_start_event;
  p->fail_end_after_first = pl->fail_end_after_first;
  p->stray_kernels = pl->stray_kernels;
  p->host_clock_kernels = pl->host_clock_kernels;
  p->seen_args = &pl->seen_args;
  *out = &p->base;
  return nullptr;
}
void fake_release_plugin(epprof_plugin* self) { reinterpret_cast<FakePlugin*>(self)->released = true; }

FakePlugin* new_fake_plugin() {
  auto* pl = new FakePlugin();
  pl->base = {EPPROF_EP_ABI_VERSION, "fake", fake_create, fake_release_plugin};
  return pl;
}

// ---- loading ----

TEST(PluginLoad, ExamplePluginLoads) {
  epprof_plugin_t p;
  EPPROF_ASSERT_OK(epprof_plugin_load(EPPROF_EXAMPLE_PLUGIN_PATH, &p));
  const char* name = nullptr;
  EPPROF_ASSERT_OK(epprof_plugin_get_name(p, &name));
  EXPECT_STREQ(name, "example");
  EPPROF_ASSERT_OK(epprof_plugin_unload(p));
  const auto stale_name = take(epprof_plugin_get_name(p, &name));
  EXPECT_EQ(stale_name.code, EPPROF_NOT_FOUND);
  EXPECT_EQ(stale_name.message, "epprof_plugin_get_name: unknown or unloaded plugin handle");
  const auto stale_unload = take(epprof_plugin_unload(p));
  EXPECT_EQ(stale_unload.code, EPPROF_NOT_FOUND);
  EXPECT_EQ(stale_unload.message, "epprof_plugin_unload: unknown or unloaded plugin handle");
}

// The table holds 64 plugins; the next registration is refused, naming the
// limit, and a freed slot takes a plugin again.
TEST(PluginLoad, AFullTableRefusesTheNextPluginNamingTheLimit) {
  FakePlugin* pl = new_fake_plugin();
  std::vector<epprof_plugin_t> held;
  epprof::testing::StatusResult refused{};
  for (int i = 0; i < 65; ++i) {
    epprof_plugin_t h;
    refused = take(epprof_plugin_register(&pl->base, &h));
    if (refused.code != EPPROF_OK) break;
    held.push_back(h);
  }
  EXPECT_LE(held.size(), 64u);
  EXPECT_EQ(refused.code, EPPROF_RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.message, "epprof_plugin_register: 64 plugins are already loaded");
  ASSERT_FALSE(held.empty());
  EPPROF_EXPECT_OK(epprof_plugin_unload(held.back()));
  held.pop_back();
  epprof_plugin_t again;
  EPPROF_EXPECT_OK(epprof_plugin_register(&pl->base, &again));
  held.push_back(again);
  for (epprof_plugin_t h : held) EPPROF_EXPECT_OK(epprof_plugin_unload(h));
  delete pl;
}

TEST(PluginLoad, NewerAbiIsRefusedNamingBothVersions) {
  epprof_plugin_t p;
  auto r = take(epprof_plugin_load(EPPROF_TEST_NEWER_ABI_PATH, &p));
  EXPECT_EQ(r.code, EPPROF_VERSION_MISMATCH);
  EXPECT_NE(r.message.find("version " + std::to_string(EPPROF_EP_ABI_VERSION + 1)), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("up to version " + std::to_string(EPPROF_EP_ABI_VERSION)), std::string::npos) << r.message;
}

TEST(PluginLoad, MissingSlotIsRefusedNamingIt) {
  epprof_plugin_t p;
  auto r = take(epprof_plugin_load(EPPROF_TEST_MISSING_SLOT_PATH, &p));
  EXPECT_EQ(r.code, EPPROF_PLUGIN_ERROR);
  EXPECT_NE(r.message.find("create_profiler"), std::string::npos) << r.message;
}

TEST(PluginLoad, LibraryWithoutEntryOrMissingFile) {
  epprof_plugin_t p;
  auto r = take(epprof_plugin_load(EPPROF_TEST_NO_ENTRY_PATH, &p));
  EXPECT_EQ(r.code, EPPROF_NOT_FOUND);
  EXPECT_NE(r.message.find(EPPROF_PLUGIN_ENTRY_SYMBOL), std::string::npos) << r.message;
  r = take(epprof_plugin_load("/no/such/plugin.so", &p));
  EXPECT_EQ(r.code, EPPROF_NOT_FOUND);
  EXPECT_NE(r.message.find("/no/such/plugin.so"), std::string::npos) << r.message;
  EXPECT_EQ(take(epprof_plugin_load(nullptr, &p)).code, EPPROF_INVALID_ARGUMENT);
}

TEST(PluginRegister, ProfilerMissingRequiredSlotIsRefused) {
  auto* pl = new_fake_plugin();
  pl->base.create_profiler = [](epprof_plugin*, epprof_ep_profiler** out) -> epprof_status* {
    static epprof_ep_profiler incomplete = {EPPROF_EP_ABI_VERSION, nullptr, nullptr, nullptr,
                                            nullptr, [](epprof_ep_profiler*) {}, nullptr};
    *out = &incomplete;
    return nullptr;
  };
  epprof_plugin_t h;
  EPPROF_ASSERT_OK(epprof_plugin_register(&pl->base, &h));
  TempDir dir;
  std::string path = dir.file("t.json");
  auto c = config_for(path);
  epprof_profiler_t prof;
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &prof));
  auto r = take(epprof_profiler_add_plugin(prof, h));
  EXPECT_EQ(r.code, EPPROF_PLUGIN_ERROR);
  EXPECT_NE(r.message.find("start_profiling"), std::string::npos) << r.message;
  EPPROF_EXPECT_OK(epprof_profiler_destroy(prof));
  EPPROF_EXPECT_OK(epprof_plugin_unload(h));
  EXPECT_TRUE(pl->released);
  delete pl;
}

// ---- profiling with the fake plugin ----

struct Recorded {
  std::vector<epprof::testing::TraceEvent> events;
  epprof_trace_stats stats{};
};

// How run_fake's node events say what node they execute.
enum class NodeArgs {
  kDeclared,     // op_name=Gemm, then a set that declares node "n" (Gemm, index 3)
  kDeclaredSet,  // one set that declares the node and holds op_name=Gemm, node_index=3
  kUndeclared,   // the args op_name=Gemm and node_index=3, and no declaration
};

// Each node event is named "gemm step": not the node's name, and no
// naming convention, so attribution has only what the host declared.
Recorded run_fake(FakePlugin* pl, int nodes, NodeArgs how = NodeArgs::kDeclared) {
  Recorded out;
  epprof_plugin_t h;
  EXPECT_EQ(take(epprof_plugin_register(&pl->base, &h)).code, EPPROF_OK);
  TempDir dir;
  std::string path = dir.file("t.json");
  auto c = config_for(path);
  epprof_profiler_t prof;
  EXPECT_EQ(take(epprof_profiler_create(&c, &prof)).code, EPPROF_OK);
  EXPECT_EQ(take(epprof_profiler_add_plugin(prof, h)).code, EPPROF_OK);
  // Unloading a plugin a profiler uses is refused.
  EXPECT_EQ(take(epprof_plugin_unload(h)).code, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(take(epprof_profiler_start(prof)).code, EPPROF_OK);
  const epprof_name_id node = name_id("gemm step");
  epprof_arg op{name_id("op_name"), EPPROF_ARG_STRING, {}};
  op.value.str = "Gemm";
  epprof_arg both[2] = {op, {name_id("node_index"), EPPROF_ARG_INT64, {}}};
  both[1].value.i64 = 3;
  epprof_arg declared[2] = {op, epprof::testing::set_arg(epprof::testing::node_set("n", "Gemm", 3))};
  const epprof_arg in_set = epprof::testing::set_arg(epprof::testing::node_set("n", "Gemm", 3, nullptr, both, 2));
  EXPECT_NE(declared[1].value.set, 0u);
  EXPECT_NE(in_set.value.set, 0u);
  const epprof_arg* args = how == NodeArgs::kDeclared ? declared : how == NodeArgs::kDeclaredSet ? &in_set : both;
  const size_t num_args = how == NodeArgs::kDeclaredSet ? 1 : 2;
  for (int i = 0; i < nodes; ++i) {
    uint64_t id = epprof_correlation_id_next();
    EXPECT_EQ(take(epprof_event_begin(prof, EPPROF_CATEGORY_NODE, node, id)).code, EPPROF_OK);
    pl->clock.now += 10'000;
    EXPECT_EQ(take(epprof_event_end(prof, id, args, num_args)).code, EPPROF_OK);
  }
  out.stats.size = sizeof out.stats;
  EXPECT_EQ(take(epprof_profiler_stop(prof, &out.stats)).code, EPPROF_OK);
  out.events = read_trace(path);
  EXPECT_EQ(take(epprof_profiler_destroy(prof)).code, EPPROF_OK);
  EXPECT_EQ(take(epprof_plugin_unload(h)).code, EPPROF_OK);
  return out;
}

TEST(FakePluginProfiling, OffsetFormulaPlacesEpEventsOnTheHostTimeline) {
  auto* pl = new_fake_plugin();
  Recorded r = run_fake(pl, 3);
  std::vector<const epprof::testing::TraceEvent*> kernels;
  for (auto& e : r.events)
    if (e.cat == "Kernel") kernels.push_back(&e);
  ASSERT_EQ(kernels.size(), 3u);
  // Kernel i started 2000 EP-ns before the i-th stop at EP time
  // start + 10000*(i+1); with the offset formula its host ts is
  // offset + 10000*(i+1) - 2000, so consecutive kernels are 10 µs apart
  // exactly and each lasts 1 µs, whatever the EP clock's epoch.
  EXPECT_DOUBLE_EQ(kernels[1]->ts - kernels[0]->ts, 10.0);
  EXPECT_DOUBLE_EQ(kernels[2]->ts - kernels[1]->ts, 10.0);
  EXPECT_DOUBLE_EQ(kernels[0]->dur, 1.0);
  EXPECT_GE(kernels[0]->ts, 8.0);  // offset >= 0: after T0 + 10 µs - 2 µs
  EXPECT_LT(kernels[0]->ts, 1e6);  // and not on the EP clock's own epoch (5 s)
  EXPECT_EQ(r.stats.device_events, 3u);
  EXPECT_EQ(r.stats.unattributed_device_events, 0u);
  EXPECT_TRUE(pl->released);
  delete pl;
}

// Version 2: the host's profiling start on the host clock, before
// start_profiling; a plugin that puts its times on the host clock needs no
// clock read of its own at start (which the first touch of its code can
// delay by tens of microseconds).
TEST(FakePluginProfiling, HostStartGivesTheTraceT0BeforeStartProfiling) {
  auto* pl = new_fake_plugin();
  pl->host_start_slot = true;
  Recorded r = run_fake(pl, 1);
  const epprof::testing::TraceEvent* meta = nullptr;
  for (auto& e : r.events)
    if (e.name == "epprof_metadata") meta = &e;
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(std::to_string(pl->host_start_ns), meta->arg("t0_monotonic_ns"));
  EXPECT_FALSE(pl->host_start_after_start_profiling);
  delete pl;
}

TEST(FakePluginProfiling, HostStartIsNotCalledOnAVersion1Profiler) {
  auto* pl = new_fake_plugin();
  pl->host_start_slot = true;
  pl->host_start_abi = 1;  // the slot lies past a version-1 struct: never read
  Recorded r = run_fake(pl, 1);
  EXPECT_EQ(pl->host_start_ns, -1);
  EXPECT_EQ(r.stats.device_events, 1u);
  delete pl;
}

TEST(FakePluginProfiling, DeviceEventsAreAttributedAndLinkedByFlows) {
  auto* pl = new_fake_plugin();
  Recorded r = run_fake(pl, 4);
  std::map<std::string, const epprof::testing::TraceEvent*> nodes;
  for (auto& e : r.events)
    if (e.cat == "Node") nodes[e.arg("correlation_id")] = &e;
  int kernels = 0, flows_s = 0, flows_f = 0;
  for (auto& e : r.events) {
    if (e.cat == "Flow") (e.ph == "s" ? flows_s : flows_f)++;
    if (e.cat != "Kernel") continue;
    ++kernels;
    auto it = nodes.find(e.arg("correlation_id"));
    ASSERT_NE(it, nodes.end()) << "kernel without its node";
    EXPECT_EQ(e.arg("op_name"), "Gemm");
    EXPECT_EQ(e.arg("parent_name"), it->second->name);
    EXPECT_EQ(e.arg("stream"), "7");
    EXPECT_NE(e.tid, it->second->tid) << "device events have their own track";
  }
  EXPECT_EQ(kernels, 4);
  EXPECT_EQ(flows_s, 4);
  EXPECT_EQ(flows_f, 4);
  delete pl;
}

// A kernel that seems to end before its node begins, even before the node
// before it begins (the device's clock behind the host's), is still
// attributed to its node, and its track stays in end-time order: it used to
// wait for its node and be written after every other device event, which
// `epprof validate` refused.
TEST(FakePluginProfiling, AKernelThatEndsBeforeItsNodeKeepsItsTrackInEndOrder) {
  auto* pl = new_fake_plugin();
  pl->host_start_slot = true;  // kernels on the host clock need the host's T0
  pl->host_clock_kernels = true;
  Recorded r = run_fake(pl, 4);
  std::map<std::string, const epprof::testing::TraceEvent*> nodes;
  for (auto& e : r.events)
    if (e.cat == "Node") nodes[e.arg("correlation_id")] = &e;
  std::vector<const epprof::testing::TraceEvent*> kernels;
  for (auto& e : r.events)
    if (e.cat == "Kernel") kernels.push_back(&e);
  ASSERT_EQ(kernels.size(), 4u);
  size_t early = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const auto& k = *kernels[i];
    auto node = nodes.find(k.arg("correlation_id"));
    ASSERT_NE(node, nodes.end()) << "kernel without its node";
    EXPECT_EQ(k.arg("parent_name"), node->second->name);
    if (k.ts + k.dur < node->second->ts) ++early;
    if (i > 0) {
      EXPECT_LE(kernels[i - 1]->ts + kernels[i - 1]->dur, k.ts + k.dur) << "kernel " << i << " ends first";
    }
  }
  EXPECT_EQ(early, 1u);
  EXPECT_EQ(r.stats.unattributed_device_events, 0u);
  delete pl;
}

TEST(FakePluginProfiling, AnArgSetReachesPluginsAndAttributionExpanded) {
  auto* pl = new_fake_plugin();
  Recorded r = run_fake(pl, 2, NodeArgs::kDeclaredSet);
  EXPECT_EQ(pl->seen_args, (std::vector<std::string>{"op_name=Gemm", "node_index=3", "op_name=Gemm", "node_index=3"}));
  int kernels = 0;
  for (auto& e : r.events) {
    if (e.cat != "Kernel") continue;
    ++kernels;
    EXPECT_EQ(e.arg("op_name"), "Gemm");
    EXPECT_EQ(e.arg("node_index"), "3");
  }
  EXPECT_EQ(kernels, 2);
  delete pl;
}

// Attribution reads no names and no args: a node event that declares no
// node gives its device work only its own name, whatever args it has.
TEST(FakePluginProfiling, AnUndeclaredNodeIsAttributedByItsEventNameAlone) {
  auto* pl = new_fake_plugin();
  Recorded r = run_fake(pl, 2, NodeArgs::kUndeclared);
  int kernels = 0;
  for (auto& e : r.events) {
    if (e.cat != "Kernel") continue;
    ++kernels;
    EXPECT_EQ(e.arg("parent_name"), "gemm step");
    EXPECT_FALSE(e.has_arg("op_name")) << "attribution read the host's op_name arg";
    EXPECT_FALSE(e.has_arg("node_index")) << "attribution read the host's node_index arg";
    EXPECT_FALSE(e.has_arg("unattributed"));
  }
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(r.stats.unattributed_device_events, 0u);
  delete pl;
}

TEST(FakePluginProfiling, DeviceEventsWithoutAHostEventAreKeptMarkedAndCounted) {
  auto* pl = new_fake_plugin();
  pl->stray_kernels = true;
  Recorded r = run_fake(pl, 3);
  int attributed = 0, unattributed = 0, flows = 0;
  for (auto& e : r.events) {
    if (e.cat == "Flow" && e.ph == "s") ++flows;
    if (e.cat != "Kernel") continue;
    if (e.arg("unattributed") == "true") {
      ++unattributed;
      EXPECT_FALSE(e.has_arg("op_name")) << "an unattributed kernel got a node's attribution";
    } else {
      ++attributed;
      EXPECT_EQ(e.arg("op_name"), "Gemm");
    }
  }
  EXPECT_EQ(attributed, 3);
  EXPECT_EQ(unattributed, 2);
  EXPECT_EQ(flows, 3) << "only attributed kernels get a flow";
  EXPECT_EQ(r.stats.device_events, 5u);
  EXPECT_EQ(r.stats.unattributed_device_events, 2u);
  const epprof::testing::TraceEvent* meta = nullptr;
  for (auto& e : r.events)
    if (e.name == "epprof_metadata") meta = &e;
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->arg("unattributed_device_events"), "2");
  delete pl;
}

// Collects what a session delivers.
epprof_status* collect_records(void* user, epprof_session_t, const epprof_record* records, size_t count, uint64_t) {
  auto* out = static_cast<std::vector<epprof_record>*>(user);
  out->insert(out->end(), records, records + count);
  return nullptr;
}

TEST(FakePluginProfiling, ActiveSessionsReceiveTheDeviceEventsWithTheirAttribution) {
  std::vector<epprof_record> got;
  epprof_session_config sc{};
  sc.size = sizeof sc;
  sc.record_size = sizeof(epprof_record);
  sc.callback = collect_records;
  sc.callback_user_data = &got;
  sc.record_kinds = 1u << EPPROF_RECORD_DEVICE_EVENT;
  sc.kernel_name_regex = "fake_.*";
  epprof_session_t session;
  EPPROF_ASSERT_OK(epprof_session_create(&sc, &session));
  EPPROF_ASSERT_OK(epprof_session_start(session));
  auto* pl = new_fake_plugin();
  Recorded r = run_fake(pl, 3);
  EPPROF_ASSERT_OK(epprof_session_stop(session));  // delivers what is buffered
  EPPROF_ASSERT_OK(epprof_session_destroy(session));

  std::map<std::string, const epprof::testing::TraceEvent*> kernels;  // by correlation id
  for (auto& e : r.events)
    if (e.cat == "Kernel") kernels[e.arg("correlation_id")] = &e;
  ASSERT_EQ(got.size(), 3u);
  for (const epprof_record& rec : got) {
    EXPECT_EQ(rec.kind, uint32_t(EPPROF_RECORD_DEVICE_EVENT));
    EXPECT_EQ(rec.category, uint32_t(EPPROF_CATEGORY_KERNEL));
    EXPECT_STREQ(epprof_name(rec.kernel), "fake_kernel");
    EXPECT_STREQ(epprof_name(rec.ep), "fake");
    EXPECT_STREQ(epprof_name(rec.op_type), "Gemm");
    EXPECT_STREQ(epprof_name(rec.node), "n");  // declared; the node event is "gemm step"
    EXPECT_EQ(rec.node_index, 3u);
    auto k = kernels.find(std::to_string(rec.correlation_id));
    ASSERT_NE(k, kernels.end()) << "a record for a kernel the trace does not have";
    EXPECT_EQ(rec.dur_ns, std::llround(k->second->dur * 1000));
  }
  delete pl;
}

TEST(FakePluginProfiling, ErrorsAreCountedRecordedAndDoNotStopProfiling) {
  auto* pl = new_fake_plugin();
  pl->fail_start_event = true;
  pl->fail_end_after_first = true;
  Recorded r = run_fake(pl, 5);
  // start_event failed 5 times: counted, profiling went on; end_profiling
  // failed after appending one event: that event is kept.
  EXPECT_EQ(r.stats.plugin_errors, 6u);
  EXPECT_EQ(r.stats.device_events, 1u);
  EXPECT_EQ(r.stats.host_events, 5u);
  bool recorded = false;
  for (auto& e : r.events) {
    if (e.name != "epprof_metadata") continue;
    recorded = true;
  }
  EXPECT_TRUE(recorded);
  delete pl;
}

TEST(FakePluginProfiling, EveryScopeGetsItsOwnInstance) {
  auto* pl = new_fake_plugin();
  static int creates = 0;
  creates = 0;
  pl->base.create_profiler = [](epprof_plugin* self, epprof_ep_profiler** out) {
    ++creates;
    return fake_create(self, out);
  };
  epprof_plugin_t h;
  EPPROF_ASSERT_OK(epprof_plugin_register(&pl->base, &h));
  TempDir dir;
  std::string a = dir.file("a.json"), b = dir.file("b.json");
  auto ca = config_for(a), cb = config_for(b);
  epprof_profiler_t pa, pb;
  EPPROF_ASSERT_OK(epprof_profiler_create(&ca, &pa));
  EPPROF_ASSERT_OK(epprof_profiler_create(&cb, &pb));
  EPPROF_ASSERT_OK(epprof_profiler_add_plugin(pa, h));
  EPPROF_ASSERT_OK(epprof_profiler_add_plugin(pb, h));
  EXPECT_EQ(creates, 2);
  EPPROF_ASSERT_OK(epprof_profiler_destroy(pa));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(pb));
  EPPROF_ASSERT_OK(epprof_plugin_unload(h));
  delete pl;
}

}  // namespace
