// The CUDA EP's tracing path without a GPU: CUPTI record structs built by
// hand are parsed, joined to node ids through EXTERNAL_CORRELATION records
// (in any order), converted onto the host timeline, and — through the real
// EP profiler slots and libepprof — written to a trace that is read back
// with an independent JSON parser. Also: the kernels compile with NVRTC.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "activity_source.h"
#include "cupti_records.h"
#include "epprof/epprof.h"
#include "kernels.h"
#include "profiler.h"
#include "records.h"
#include "support/test_util.h"

namespace epprof::cuda {
namespace {

using epprof::testing::TraceEvent;

std::string arg(const DeviceEvent& e, const std::string& key) {
  for (const auto& kv : e.args)
    if (kv.first == key) return kv.second;
  return "<none>";
}

KernelRecord kernel(uint32_t cupti_id, uint64_t start, uint64_t end, const char* name = "k") {
  KernelRecord r;
  r.correlation_id = cupti_id;
  r.start_ns = start;
  r.end_ns = end;
  r.device_id = 0;
  r.stream_id = 7;
  r.grid[0] = 4, r.grid[1] = 2, r.grid[2] = 1;
  r.block[0] = 256, r.block[1] = 1, r.block[2] = 1;
  r.name = name;
  return r;
}

constexpr int64_t kWide = INT64_MAX / 2;  // a scope that holds every test record

// ---- RecordConverter ----

TEST(RecordConverter, JoinsAKernelToItsExternalIdAndFormatsItsArgs) {
  RecordConverter c;
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, 42, 11});
  KernelRecord k = kernel(11, 1000, 3500, "binary_add");
  k.static_shared_bytes = 16;
  k.dynamic_shared_bytes = 32;
  k.registers_per_thread = 24;
  c.add(k);
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, &st);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].category, EPPROF_CATEGORY_KERNEL);
  EXPECT_EQ(ev[0].name, "binary_add");
  EXPECT_EQ(ev[0].correlation_id, 42u);
  EXPECT_EQ(ev[0].dur_ns, 2500);
  EXPECT_EQ(arg(ev[0], "grid"), "[4,2,1]");
  EXPECT_EQ(arg(ev[0], "block"), "[256,1,1]");
  EXPECT_EQ(arg(ev[0], "stream"), "7");
  EXPECT_EQ(arg(ev[0], "device"), "0");
  EXPECT_EQ(arg(ev[0], "cupti_correlation_id"), "11");
  EXPECT_EQ(arg(ev[0], "shared_memory_bytes"), "48");
  EXPECT_EQ(arg(ev[0], "registers_per_thread"), "24");
  EXPECT_EQ(arg(ev[0], "unattributed"), "<none>");
  EXPECT_EQ(ev[0].track, track_of(0, 7));
  EXPECT_EQ(st.kernels, 1u);
  EXPECT_EQ(st.unattributed, 0u);
}

TEST(RecordConverter, ExternalCorrelationRecordsMayArriveAfterTheirKernels) {
  RecordConverter c;
  // Two CUPTI buffers: the kernels complete in the first, their external
  // correlation records in the second, in reverse order.
  RecordBatch first, second;
  first.kernels = {kernel(21, 100, 200), kernel(22, 300, 400)};
  first.memcpys.push_back(MemcpyRecord{23, 50, 90, 4096, static_cast<uint8_t>(CopyKind::HtoD), 0, 1, 7});
  second.external = {{kExternalKindEpprof, 902, 22}, {kExternalKindEpprof, 901, 21}, {kExternalKindEpprof, 901, 23}};
  c.add(first);
  c.add(second);
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, &st);
  ASSERT_EQ(ev.size(), 3u);
  // Sorted by start: the copy, then the two kernels.
  EXPECT_EQ(ev[0].category, EPPROF_CATEGORY_MEMCPY);
  EXPECT_EQ(ev[0].correlation_id, 901u);
  EXPECT_EQ(ev[1].correlation_id, 901u);
  EXPECT_EQ(ev[2].correlation_id, 902u);
  EXPECT_EQ(st.external_correlations, 3u);
  EXPECT_EQ(st.unattributed, 0u);
}

TEST(RecordConverter, RecordsWithoutAnExternalIdAreKeptMarkedAndCounted) {
  RecordConverter c;
  c.add(kernel(31, 100, 200, "cublas_init"));
  c.add(MemsetRecord{32, 210, 220, 64, 0, 0, 1, 7});
  c.add(kernel(33, 300, 400, "attributed"));
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, 5, 33});
  // Another tool's external id for the first kernel does not count as ours.
  c.add(ExternalCorrelationRecord{kExternalKindEpprof + 1, 77, 31});
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, &st);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].name, "cublas_init");
  EXPECT_EQ(ev[0].correlation_id, 0u);
  EXPECT_EQ(arg(ev[0], "unattributed"), "true");
  EXPECT_EQ(ev[1].name, "Memset");
  EXPECT_EQ(ev[1].correlation_id, 0u);
  EXPECT_EQ(arg(ev[1], "unattributed"), "true");
  EXPECT_EQ(arg(ev[1], "bytes"), "64");
  EXPECT_EQ(ev[2].correlation_id, 5u);
  EXPECT_EQ(st.unattributed, 2u);
  EXPECT_EQ(st.external_correlations, 1u);
  EXPECT_EQ(st.kernels, 2u);
  EXPECT_EQ(st.memsets, 1u);
}

TEST(RecordConverter, TimestampsGoOntoTheHostProfilingTimeline) {
  // Host profiling started at host clock 1'000'000; this EP profiler
  // started 5'000 ns later (its start_offset). A record at host clock
  // 1'012'345 is 12'345 ns after the EP profiler's start.
  const TimeBase tb{5'000, 1'005'000};
  EXPECT_EQ(tb.to_timeline(1'005'000), 5'000);
  EXPECT_EQ(tb.to_timeline(1'012'345), 12'345);
  EXPECT_EQ(tb.to_timeline(1'004'000), 4'000);  // before the EP's start, still exact

  RecordConverter c;
  c.add(kernel(1, 1'012'345, 1'013'000));
  c.add(kernel(2, 1'020'000, 1'019'000));  // end before start: clamped, counted
  ConversionStats st;
  const auto ev = c.convert(tb, 1'005'000, 2'000'000, &st);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].ts_ns, 12'345);
  EXPECT_EQ(ev[0].dur_ns, 655);
  EXPECT_EQ(ev[1].ts_ns, 20'000);
  EXPECT_EQ(ev[1].dur_ns, 0);
  EXPECT_EQ(st.clamped, 1u);
}

TEST(RecordConverter, RecordsOutsideTheScopeAreLeftOutAndCounted) {
  RecordConverter c;
  c.add(kernel(1, 500, 600));    // before the scope
  c.add(kernel(2, 1500, 1600));  // inside
  c.add(MemcpyRecord{3, 2500, 2600, 8, static_cast<uint8_t>(CopyKind::DtoH), 0, 1, 7});  // after
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 1000}, 1000, 2000, &st);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(arg(ev[0], "cupti_correlation_id"), "2");
  EXPECT_EQ(st.outside_scope, 2u);
}

TEST(RecordConverter, NamesAndTracks) {
  EXPECT_EQ(copy_kind_name(1), "HtoD");
  EXPECT_EQ(copy_kind_name(2), "DtoH");
  EXPECT_EQ(copy_kind_name(8), "DtoD");
  EXPECT_EQ(copy_kind_name(10), "PtoP");
  EXPECT_EQ(copy_kind_name(200), "kind 200");
  EXPECT_NE(track_of(0, 7), track_of(1, 7));
  EXPECT_NE(track_of(0, 7), track_of(0, 8));
  EXPECT_EQ(track_name(1, 13), "CUDA device 1 stream 13");
  const int32_t d[3] = {65535, 1, 3};
  EXPECT_EQ(format_dim3(d), "[65535,1,3]");

  RecordConverter c;
  c.add(MemcpyRecord{3, 10, 20, 8, static_cast<uint8_t>(CopyKind::DtoH), 0, 1, 7});
  c.add(kernel(4, 30, 40, "_ZN7cutlass6KernelIiEEvT_"));  // mangled, as cuBLAS kernels arrive
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, nullptr);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].name, "MemcpyDtoH");
  EXPECT_EQ(arg(ev[0], "direction"), "DtoH");
  EXPECT_EQ(ev[1].name, "void cutlass::Kernel<int>(int)");
  const auto s = c.streams();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0], std::make_pair(0u, 7u));
}

// ---- CUPTI's own record structs ----

TEST(CuptiRecords, ParsesKernelMemcpyMemsetAndExternalCorrelationStructs) {
  RecordBatch b;
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = 77;
  k.start = 1000;
  k.end = 2000;
  k.deviceId = 1;
  k.streamId = 13;
  k.gridX = 8, k.gridY = 4, k.gridZ = 2;
  k.blockX = 128, k.blockY = 2, k.blockZ = 1;
  k.staticSharedMemory = 100;
  k.dynamicSharedMemory = 28;
  k.registersPerThread = 40;
  k.name = "unary_relu";
  EXPECT_TRUE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&k), &b));
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.bytes = 1 << 20;
  m.correlationId = 78;
  m.start = 2100;
  m.end = 2900;
  m.streamId = 13;
  m.deviceId = 1;
  EXPECT_TRUE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&m), &b));
  CUpti_ActivityMemset4 s{};
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.value = 255;
  s.bytes = 512;
  s.correlationId = 79;
  s.start = 3000;
  s.end = 3100;
  EXPECT_TRUE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&s), &b));
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = 0x1234567890ull;
  e.correlationId = 77;
  EXPECT_TRUE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&e), &b));
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;  // not traced
  EXPECT_FALSE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&api), &b));

  ASSERT_EQ(b.kernels.size(), 1u);
  ASSERT_EQ(b.memcpys.size(), 1u);
  ASSERT_EQ(b.memsets.size(), 1u);
  ASSERT_EQ(b.external.size(), 1u);
  EXPECT_EQ(b.kernels[0].name, "unary_relu");
  EXPECT_EQ(b.kernels[0].grid[2], 2);
  EXPECT_EQ(b.kernels[0].block[1], 2);
  EXPECT_EQ(b.memcpys[0].bytes, 1u << 20);
  EXPECT_EQ(b.memsets[0].value, 255u);
  EXPECT_EQ(b.external[0].external_id, 0x1234567890ull);

  RecordConverter c;
  c.add(b);
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, &st);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].correlation_id, 0x1234567890ull);
  EXPECT_EQ(arg(ev[0], "grid"), "[8,4,2]");
  EXPECT_EQ(arg(ev[0], "block"), "[128,2,1]");
  EXPECT_EQ(arg(ev[0], "stream"), "13");
  EXPECT_EQ(arg(ev[0], "shared_memory_bytes"), "128");
  EXPECT_EQ(ev[1].name, "MemcpyDtoH");
  EXPECT_EQ(st.unattributed, 2u);  // the copy and the memset had no external id
}

TEST(CuptiRecords, MemoryRecordsBecomeMemoryEvents) {
  RecordBatch b;
  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.correlationId = 90;
  m.address = 0x7f0000001000ull;
  m.bytes = 65536;
  m.timestamp = 5000;
  m.deviceId = 2;
  EXPECT_TRUE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&m), &b));
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  m.correlationId = 91;
  m.timestamp = 6000;
  EXPECT_TRUE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&m), &b));
  ASSERT_EQ(b.memory.size(), 2u);
  EXPECT_FALSE(b.memory[0].release);
  EXPECT_TRUE(b.memory[1].release);
  b.external = {{kExternalKindEpprof, 0xabc, 90}};

  RecordConverter c;
  c.add(b);
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, &st);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(st.memory, 2u);
  EXPECT_EQ(st.unattributed, 0u);  // memory is not device work left unattributed
  EXPECT_EQ(ev[0].category, EPPROF_CATEGORY_MEMORY);
  EXPECT_EQ(ev[0].name, "cuda:2");
  EXPECT_EQ(ev[0].correlation_id, 0xabcu);
  EXPECT_EQ(arg(ev[0], "kind"), "alloc");
  EXPECT_EQ(arg(ev[0], "allocation_id"), std::to_string(0x7f0000001000ull));
  EXPECT_EQ(arg(ev[0], "bytes"), "65536");
  EXPECT_EQ(arg(ev[1], "kind"), "free");
  EXPECT_EQ(ev[1].correlation_id, 0u);
}

// ---- The per-thread external id stack shared by profilers ----

TEST(SharedIdStack, PushesOncePerIdAndPopsWhenTheLastHolderLeaves) {
  SharedIdStack s;
  EXPECT_TRUE(s.enter(10));   // session scope: push 10
  EXPECT_FALSE(s.enter(10));  // run scope, same node: already on top
  EXPECT_TRUE(s.enter(11));   // a nested event
  EXPECT_EQ(s.leave(10), SharedIdStack::Leave::kMismatch);  // 11 is on top
  EXPECT_EQ(s.depth(), 2u);
  EXPECT_EQ(s.leave(11), SharedIdStack::Leave::kPop);
  EXPECT_EQ(s.leave(10), SharedIdStack::Leave::kStillHeld);
  EXPECT_EQ(s.leave(10), SharedIdStack::Leave::kPop);
  EXPECT_EQ(s.leave(10), SharedIdStack::Leave::kMismatch);
  EXPECT_EQ(s.depth(), 0u);
}

// ---- The EP profiler, driven by libepprof, over a fake CUPTI ----

// Delivers queued batches at flush (detach), as CUPTI's forced flush does.
class FakeSource final : public ActivitySource {
 public:
  bool attach(RecordConverter* sink, std::string* error) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_attach) {
      *error = "cuptiActivityEnable failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (fake)";
      return false;
    }
    sinks_.push_back(sink);
    return true;
  }
  void detach(RecordConverter* sink) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const RecordBatch& b : queued) for (RecordConverter* s : sinks_) s->add(b);
    queued.clear();
    sinks_.erase(std::remove(sinks_.begin(), sinks_.end(), sink), sinks_.end());
  }
  uint64_t dropped_records() const override { return dropped; }
  bool push_external_id(uint64_t id, std::string*) override {
    if (stack_.enter(id)) pushes.push_back(id);
    return true;
  }
  bool pop_external_id(uint64_t id, std::string* error) override {
    const auto r = stack_.leave(id);
    if (r == SharedIdStack::Leave::kMismatch) {
      *error = "not on top";
      return false;
    }
    if (r == SharedIdStack::Leave::kPop) pops.push_back(id);
    return true;
  }
  std::string clock_description() const override { return "fake: host clock"; }

  std::vector<RecordBatch> queued;
  uint64_t dropped = 0;
  bool fail_attach = false;
  std::vector<uint64_t> pushes, pops;

 private:
  std::mutex mu_;
  std::vector<RecordConverter*> sinks_;
  SharedIdStack stack_;
};

struct FakePlugin {
  epprof_plugin c{};
  FakeSource* source = nullptr;
};

epprof_plugin* make_plugin(FakeSource* source) {
  auto* p = new FakePlugin;
  p->c.abi_version = EPPROF_EP_ABI_VERSION;
  p->c.name = "cuda";
  p->c.create_profiler = [](epprof_plugin* self, epprof_ep_profiler** out) -> epprof_status* {
    *out = create_profiler(ProfilerEnv{epprof_get_host_api(), reinterpret_cast<FakePlugin*>(self)->source, "fake GPU"});
    return nullptr;
  };
  p->c.release = [](epprof_plugin* self) { delete reinterpret_cast<FakePlugin*>(self); };
  p->source = source;
  return &p->c;
}

class CudaProfiler : public ::testing::Test {
 protected:
  void SetUp() override { EPPROF_ASSERT_OK(epprof_plugin_register(make_plugin(&source), &plugin)); }
  void TearDown() override { epprof_status_release(epprof_plugin_unload(plugin)); }

  // One profiled scope with one node; `issue` queues the device records
  // the node's compute would have produced, given its id and host clock.
  std::vector<TraceEvent> run_scope(const std::function<void(uint64_t, int64_t)>& issue, uint64_t* node_id,
                                    epprof_trace_stats* stats) {
    const std::string path = dir.file("trace.json");
    epprof_profiler_config cfg = epprof::testing::config_for(path);
    epprof_profiler_t p{};
    EXPECT_EQ(epprof::testing::take(epprof_profiler_create(&cfg, &p)).code, EPPROF_OK);
    EXPECT_EQ(epprof::testing::take(epprof_profiler_add_plugin(p, plugin)).code, EPPROF_OK);
    EXPECT_EQ(epprof::testing::take(epprof_profiler_start(p)).code, EPPROF_OK);
    *node_id = epprof_correlation_id_next();
    EXPECT_EQ(epprof::testing::take(epprof_event_begin(p, EPPROF_CATEGORY_NODE,
                                                       epprof::testing::name_id("fc1_kernel_time"), *node_id))
                  .code,
              EPPROF_OK);
    issue(*node_id, epprof_clock_now_ns());
    epprof_arg a{};
    a.key = epprof::testing::name_id("op_name");
    a.type = EPPROF_ARG_STRING;
    a.value.str = "MatMul";
    EXPECT_EQ(epprof::testing::take(epprof_event_end(p, *node_id, &a, 1)).code, EPPROF_OK);
    EXPECT_EQ(epprof::testing::take(epprof_profiler_stop(p, stats)).code, EPPROF_OK);
    EXPECT_EQ(epprof::testing::take(epprof_profiler_destroy(p)).code, EPPROF_OK);
    return epprof::testing::read_trace(path);
  }

  FakeSource source;
  epprof_plugin_t plugin{};
  epprof::testing::TempDir dir;
};

TEST_F(CudaProfiler, DeviceRecordsReachTheTraceAttributedToTheirNode) {
  uint64_t id = 0;
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto trace = run_scope(
      [&](uint64_t node, int64_t now) {
        const auto t = static_cast<uint64_t>(now);
        RecordBatch b1, b2;
        b1.memcpys.push_back(MemcpyRecord{101, t + 10, t + 20, 4096, static_cast<uint8_t>(CopyKind::HtoD), 0, 1, 7});
        b1.kernels.push_back(kernel(102, t + 30, t + 60, "sgemm"));
        b1.kernels.push_back(kernel(103, t + 70, t + 80, "stray"));  // no external id
        // The node's workspace, allocated and never freed: the leak line.
        b1.memory.push_back(MemoryRecord{104, t + 5, 0x1000, 8192, false, 0, 7});
        b2.external = {{kExternalKindEpprof, node, 102}, {kExternalKindEpprof, node, 101},
                       {kExternalKindEpprof, node, 104}};  // after their records
        source.queued = {b1, b2};
        source.dropped = 7;
      },
      &id, &stats);
  EXPECT_EQ(source.pushes, std::vector<uint64_t>{id});
  EXPECT_EQ(source.pops, std::vector<uint64_t>{id});

  const TraceEvent* node = nullptr;
  std::vector<const TraceEvent*> kernels, copies;
  for (const auto& e : trace) {
    if (e.name == "fc1_kernel_time") node = &e;
    if (e.cat == "Kernel") kernels.push_back(&e);
    if (e.cat == "Memcpy") copies.push_back(&e);
  }
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(kernels.size(), 2u);
  ASSERT_EQ(copies.size(), 1u);
  const TraceEvent& sgemm = kernels[0]->name == "sgemm" ? *kernels[0] : *kernels[1];
  const TraceEvent& stray = kernels[0]->name == "stray" ? *kernels[0] : *kernels[1];
  EXPECT_EQ(sgemm.arg("correlation_id"), std::to_string(id));
  EXPECT_EQ(sgemm.arg("parent_name"), "fc1_kernel_time");
  EXPECT_EQ(sgemm.arg("grid"), "[4,2,1]");
  EXPECT_EQ(sgemm.arg("block"), "[256,1,1]");
  EXPECT_EQ(sgemm.arg("stream"), "7");
  // The kernel ran 30..60 ns after the node began: inside the node's slice.
  EXPECT_GE(sgemm.ts, node->ts);
  EXPECT_LE(sgemm.ts + sgemm.dur, node->ts + node->dur + 1e-3);
  EXPECT_NEAR(sgemm.dur, 0.030, 1e-6);
  EXPECT_EQ(copies[0]->arg("correlation_id"), std::to_string(id));
  EXPECT_EQ(copies[0]->arg("direction"), "HtoD");
  EXPECT_EQ(copies[0]->arg("bytes"), "4096");
  EXPECT_FALSE(stray.has_arg("correlation_id"));
  EXPECT_EQ(stray.arg("unattributed"), "true");

  const auto meta = epprof::testing::plugin_metadata(trace, "cuda");
  EXPECT_EQ(meta.count("cupti_dropped_records") ? meta.at("cupti_dropped_records") : "<missing>", "7");
  EXPECT_EQ(meta.count("unattributed_device_records") ? meta.at("unattributed_device_records") : "<missing>", "1");
  EXPECT_EQ(meta.count("kernel_records") ? meta.at("kernel_records") : "<missing>", "2");
  EXPECT_EQ(meta.count("external_correlation_records") ? meta.at("external_correlation_records") : "<missing>", "3");
  EXPECT_EQ(meta.count("memory_records") ? meta.at("memory_records") : "<missing>", "1");
  EXPECT_EQ(meta.count("device") ? meta.at("device") : "<missing>", "fake GPU");
  EXPECT_EQ(stats.device_events, 3u);
  // The device allocation is the node's, on cuda:0's memory track.
  EXPECT_EQ(node->arg("mem_allocated_bytes"), "8192");
  size_t samples = 0;
  for (const auto& e : trace)
    if (e.ph == "C" && e.name == "mem_in_use cuda:0") ++samples;
  EXPECT_EQ(samples, 1u);
}

TEST_F(CudaProfiler, DroppedRecordsCountOnlyThoseOfTheScope) {
  source.dropped = 100;  // lost before this scope began
  uint64_t id = 0;
  const auto trace = run_scope([&](uint64_t, int64_t) { source.dropped = 103; }, &id, nullptr);
  const auto meta = epprof::testing::plugin_metadata(trace, "cuda");
  EXPECT_EQ(meta.count("cupti_dropped_records") ? meta.at("cupti_dropped_records") : "<missing>", "3");
}

TEST_F(CudaProfiler, AFailedAttachIsReportedAndTheScopeStillWritesItsMetadata) {
  source.fail_attach = true;
  uint64_t id = 0;
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto trace = run_scope([&](uint64_t, int64_t) {}, &id, &stats);
  EXPECT_GE(stats.plugin_errors, 1u);
  const auto meta = epprof::testing::plugin_metadata(trace, "cuda");
  ASSERT_TRUE(meta.count("tracing_error"));
  EXPECT_NE(meta.at("tracing_error").find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), std::string::npos);
}

// ---- The kernels compile with NVRTC (no GPU or driver needed) ----

TEST(CudaKernels, CompileWithNvrtcForHopper) {
  std::vector<char> cubin;
  std::string log;
  ASSERT_TRUE(compile_kernels("sm_90", false, &cubin, &log)) << log;
  ASSERT_GT(cubin.size(), 0u);
  const std::string bin(cubin.begin(), cubin.end());
  for (size_t i = 0; i < static_cast<size_t>(KernelId::Count_); ++i)
    EXPECT_NE(bin.find(kernel_symbol(static_cast<KernelId>(i))), std::string::npos)
        << kernel_symbol(static_cast<KernelId>(i)) << " is not in the CUBIN";
}

TEST(CudaKernels, ABrokenSourceFailsWithNvrtcsLog) {
  std::vector<char> cubin;
  std::string log;
  EXPECT_FALSE(compile_kernels("sm_90", true, &cubin, &log));
  EXPECT_NE(log.find("EPPROF_CUDA_BREAK_KERNELS"), std::string::npos) << log;
}

}  // namespace
}  // namespace epprof::cuda
