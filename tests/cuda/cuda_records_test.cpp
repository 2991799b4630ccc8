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
#include <stdexcept>
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
  first.memcpys.push_back(MemcpyRecord{{23, 50, 90, 0, 1, 7}, 4096, static_cast<uint8_t>(CopyKind::HtoD)});
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
  c.add(MemsetRecord{{32, 210, 220, 0, 1, 7}, 64, 0});
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
  c.add(MemcpyRecord{{3, 2500, 2600, 0, 1, 7}, 8, static_cast<uint8_t>(CopyKind::DtoH)});  // after
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
  c.add(MemcpyRecord{{3, 10, 20, 0, 1, 7}, 8, static_cast<uint8_t>(CopyKind::DtoH)});
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

// ---- The join as CUPTI delivers it: API records, then external ids ----

ApiRecord call(uint32_t cupti_id, uint64_t start, uint64_t end, bool driver, uint32_t thread = 9) {
  ApiRecord r;
  r.correlation_id = cupti_id;
  r.start_ns = start;
  r.end_ns = end;
  r.driver = driver;
  r.thread_id = thread;
  return r;
}

// One node issues, through the runtime API, a copy (runtime call 50 makes
// driver call 51; the copy record carries 51 and runtime id 50) and a
// kernel (runtime call 52); cuBLAS launches another kernel through the
// driver API (driver call 53). CUPTI writes an external record in front of
// each API record made under the pushed id: here only the runtime calls and
// cuBLAS's driver call got one (the driver calls the runtime made inside
// itself, as when only RUNTIME records are enabled, did not).
TEST(RecordConverter, JoinsCopiesAndDriverLaunchesOnTheIdTheExternalRecordNames) {
  const uint64_t node = 700;
  RecordBatch api_buffer;
  api_buffer.external = {{kExternalKindEpprof, node, 50}, {kExternalKindEpprof, node, 52},
                         {kExternalKindEpprof, node, 53}};
  api_buffer.api = {call(50, 100, 180, false), call(51, 110, 170, true), call(52, 200, 210, false),
                    call(53, 220, 230, true)};
  RecordBatch device_buffer;
  MemcpyRecord copy{51, 120, 160, 4096, static_cast<uint8_t>(CopyKind::HtoD), 0, 1, 7};
  copy.runtime_correlation_id = 50;
  device_buffer.memcpys.push_back(copy);
  device_buffer.kernels = {kernel(52, 215, 300, "relu"), kernel(53, 240, 400, "sgemm_128x64")};
  RecordConverter c;
  c.add(device_buffer);  // device records may complete before their API records' buffer
  c.add(api_buffer);
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, &st);
  ASSERT_EQ(ev.size(), 3u);  // API records serve the join; they are not exported by default
  for (const auto& e : ev) EXPECT_EQ(e.correlation_id, node) << e.name;
  EXPECT_EQ(arg(ev[0], "cupti_correlation_id"), "51");
  EXPECT_EQ(arg(ev[0], "cupti_runtime_correlation_id"), "50");
  EXPECT_EQ(st.unattributed, 0u);
  EXPECT_EQ(st.api, 4u);
  EXPECT_EQ(st.with_call, 3u);
  EXPECT_EQ(st.before_call, 0u);
}

// When the external record names the driver call, the copy joins on its own id.
TEST(RecordConverter, ACopyJoinsOnItsDriverIdWhenThatIsTheOneNamed) {
  RecordConverter c;
  MemcpyRecord copy{61, 120, 160, 64, static_cast<uint8_t>(CopyKind::DtoH), 0, 1, 7};
  copy.runtime_correlation_id = 60;
  c.add(copy);
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, 801, 61});
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, 802, 60});  // the runtime call's, another node's
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, nullptr);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].correlation_id, 801u);
}

TEST(RecordConverter, DeviceWorkBeforeItsCallIsCountedAsAClockError) {
  RecordConverter c;
  c.add(call(70, 1000, 1100, false));
  c.add(call(71, 2000, 2100, false));
  c.add(kernel(70, 1200, 1300));  // after its launch: fine
  c.add(kernel(71, 1950, 2050));  // 50 ns before its launch call began
  c.add(kernel(72, 3000, 3100));  // no API record: not checked
  ConversionStats st;
  c.convert(TimeBase{0, 0}, 0, kWide, &st);
  EXPECT_EQ(st.with_call, 2u);
  EXPECT_EQ(st.before_call, 1u);
  EXPECT_EQ(st.worst_before_call_ns, 50);
}

TEST(RecordConverter, ApiRecordsAreExportedOnlyWhenAsked) {
  RecordConverter c;
  ApiRecord launch = call(80, 100, 150, false, 31);
  launch.name = "cudaLaunchKernel";
  c.add(launch);
  c.add(call(81, 160, 170, true, 31));
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, 900, 80});
  c.add(kernel(80, 200, 300));
  EXPECT_EQ(c.convert(TimeBase{0, 0}, 0, kWide, nullptr).size(), 1u);
  c.set_export_api(true);
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, nullptr);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].category, EPPROF_CATEGORY_API);
  EXPECT_EQ(ev[0].name, "cudaLaunchKernel");
  EXPECT_EQ(ev[0].correlation_id, 900u);
  EXPECT_EQ(ev[0].track, api_track_of(31));
  EXPECT_EQ(ev[1].name, "driver call 0");  // no name known: the API and its callback id
  EXPECT_EQ(ev[2].category, EPPROF_CATEGORY_KERNEL);
  bool api_track = false;
  for (const auto& [device, stream] : c.streams()) api_track |= device == kApiTrackDevice && stream == 31;
  EXPECT_TRUE(api_track);
  EXPECT_EQ(track_name(kApiTrackDevice, 31), "CUDA API thread 31");
}

TEST(RecordConverter, RecordsCuptiCouldNotTimeAreCountedAsUntimedNotOutOfScope) {
  RecordConverter c;
  c.add(kernel(1, 0, 0));
  c.add(MemcpyRecord{{2, 0, 0, 0, 1, 7}, 8, static_cast<uint8_t>(CopyKind::DtoH)});
  c.add(kernel(3, 1500, 1600));
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 1000}, 1000, 2000, &st);
  EXPECT_EQ(ev.size(), 1u);
  EXPECT_EQ(st.untimed, 2u);
  EXPECT_EQ(st.outside_scope, 0u);
}

// The probe's memset ran inside [before, after] on the host clock; where
// CUPTI put it bounds the clock error, and the probe is not user work.
TEST(RecordConverter, ClockProbesGiveTheErrorBoundAndAreNotExported) {
  RecordConverter c;
  const uint64_t p0 = kProbeExternalIdBase, p1 = kProbeExternalIdBase + 1;
  c.add(ClockProbe{p0, 1000, 9000, 0});
  c.add(ClockProbe{p1, 50'000, 58'000, 1});
  // Probe 0 read [4000, 4002]: |4000 − 1000| = 3000, |4002 − 9000| = 4998.
  c.add(MemsetRecord{{90, 4000, 4002, 0, 1, 7}, 4, 0});
  // Probe 1 read [49'000, 49'010], 1000 ns before the window opened:
  // |49'000 − 50'000| = 1000, |49'010 − 58'000| = 8990.
  c.add(MemsetRecord{{91, 49'000, 49'010, 0, 1, 7}, 4, 0});
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, p0, 90});
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, p1, 91});
  c.add(MemsetRecord{{92, 20'000, 20'100, 0, 1, 7}, 64, 0});  // a node's memset
  ConversionStats st;
  const auto ev = c.convert(TimeBase{0, 0}, 0, kWide, &st);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(arg(ev[0], "cupti_correlation_id"), "92");
  EXPECT_EQ(st.probes_matched, 2u);
  EXPECT_EQ(st.clock_error_bound_ns, 8990);  // the loosest group's
  EXPECT_EQ(st.probe_bounds, "start 4998; end 8990");
  EXPECT_EQ(st.memsets, 1u);

  // A tighter probe of the end group holds for that group.
  c.add(ClockProbe{p1 + 1, 60'000, 61'000, 1});
  c.add(MemsetRecord{{93, 60'100, 60'200, 0, 1, 7}, 4, 0});  // |100|, |−800|: 800
  c.add(ExternalCorrelationRecord{kExternalKindEpprof, p1 + 1, 93});
  ConversionStats tighter;
  c.convert(TimeBase{0, 0}, 0, kWide, &tighter);
  EXPECT_EQ(tighter.clock_error_bound_ns, 4998);  // now the start group's is the loosest
  EXPECT_EQ(tighter.probe_bounds, "start 4998; end 8990 800");

  RecordConverter none;
  none.add(ClockProbe{p0, 1000, 9000, 0});  // its record never came
  ConversionStats st2;
  none.convert(TimeBase{0, 0}, 0, kWide, &st2);
  EXPECT_EQ(st2.probes_matched, 0u);
  EXPECT_EQ(st2.clock_error_bound_ns, -1);
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
  api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  api.cbid = 307;
  api.correlationId = 76;
  api.start = 900;
  api.end = 950;
  api.threadId = 4242;
  EXPECT_TRUE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&api), &b));
  CUpti_ActivityOverhead3 not_traced{};
  not_traced.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  EXPECT_FALSE(parse_cupti_record(reinterpret_cast<const CUpti_Activity*>(&not_traced), &b));

  ASSERT_EQ(b.kernels.size(), 1u);
  ASSERT_EQ(b.memcpys.size(), 1u);
  ASSERT_EQ(b.memsets.size(), 1u);
  ASSERT_EQ(b.external.size(), 1u);
  ASSERT_EQ(b.api.size(), 1u);
  EXPECT_TRUE(b.api[0].driver);
  EXPECT_EQ(b.api[0].cbid, 307u);
  EXPECT_EQ(b.api[0].correlation_id, 76u);
  EXPECT_EQ(b.api[0].thread_id, 4242u);
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
    open.push_back(id);
    return true;
  }
  bool pop_external_id(uint64_t id, std::string* error) override {
    if (throw_on_pop) throw std::runtime_error("pop threw");
    const auto r = stack_.leave(id);
    if (r == SharedIdStack::Leave::kMismatch) {
      *error = "not on top";
      return false;
    }
    if (r == SharedIdStack::Leave::kPop) pops.push_back(id);
    open.pop_back();
    return true;
  }
  std::string clock_description() const override { return "fake: host clock"; }

  std::vector<RecordBatch> queued;
  uint64_t dropped = 0;
  bool fail_attach = false;
  bool throw_on_pop = false;
  std::vector<uint64_t> pushes, pops;
  std::vector<uint64_t> open;  // ids pushed and not yet popped, innermost last

 private:
  std::mutex mu_;
  std::vector<RecordConverter*> sinks_;
  SharedIdStack stack_;
};

struct FakePlugin {
  epprof_plugin c{};
  FakeSource* source = nullptr;
  ClockProbeFn probe;
  std::string no_tracing_why;
};

epprof_plugin* make_plugin(FakeSource* source, ClockProbeFn probe = nullptr, std::string no_tracing_why = {}) {
  auto* p = new FakePlugin;
  p->probe = std::move(probe);
  p->no_tracing_why = std::move(no_tracing_why);
  p->c.abi_version = EPPROF_EP_ABI_VERSION;
  p->c.name = "cuda";
  p->c.create_profiler = [](epprof_plugin* self, epprof_ep_profiler** out) -> epprof_status* {
    const auto* fp = reinterpret_cast<FakePlugin*>(self);
    ProfilerEnv env;
    env.host = epprof_get_host_api();
    env.source = fp->source;
    env.device = "fake GPU";
    env.probe = fp->probe;
    env.no_tracing_why = fp->no_tracing_why;
    *out = create_profiler(env);
    return nullptr;
  };
  p->c.release = [](epprof_plugin* self) { delete reinterpret_cast<FakePlugin*>(self); };
  p->source = source;
  return &p->c;
}

class CudaProfiler : public ::testing::Test {
 protected:
  void SetUp() override { EPPROF_ASSERT_OK(epprof_plugin_register(make_plugin(&source, probe()), &plugin)); }
  virtual ClockProbeFn probe() { return nullptr; }
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
        b1.memcpys.push_back(MemcpyRecord{{101, t + 10, t + 20, 0, 1, 7}, 4096, static_cast<uint8_t>(CopyKind::HtoD)});
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

// Another CUPTI client holding the activity API: the scope runs untraced,
// without a plugin error, and its metadata says why.
TEST_F(CudaProfiler, AFailedAttachLeavesTheScopeUntracedAndSaysWhy) {
  source.fail_attach = true;
  uint64_t id = 0;
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto trace = run_scope([&](uint64_t, int64_t) {}, &id, &stats);
  EXPECT_EQ(stats.plugin_errors, 0u);
  EXPECT_TRUE(source.pushes.empty()) << "an untraced scope pushes no external ids";
  const auto meta = epprof::testing::plugin_metadata(trace, "cuda");
  ASSERT_TRUE(meta.count("device_tracing"));
  EXPECT_EQ(meta.at("device_tracing").rfind("off: ", 0), 0u) << meta.at("device_tracing");
  EXPECT_NE(meta.at("device_tracing").find("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), std::string::npos);
  EXPECT_NE(meta.at("clock_error_bound_ns").find("unknown"), std::string::npos);
}

// The clock probes, at the scope's start and end, each a memset under the
// plugin's own id inside a host-clock window; the bound they give reaches
// the metadata, and the probes are not in the trace.
class CudaProfilerWithProbes : public CudaProfiler {
 protected:
  ClockProbeFn probe() override {
    return [this](int64_t* before, int64_t* after, std::string*) {
      // The first probe of each group pays for first use: a 10 µs window;
      // the next two get 5 µs.
      *before = epprof_clock_now_ns();
      *after = *before + (probes % 3 == 0 ? 10'000 : 5'000);
      EXPECT_FALSE(source.open.empty());
      const uint64_t id = source.open.empty() ? 0 : source.open.back();
      EXPECT_GE(id, kProbeExternalIdBase);
      const uint32_t cupti_id = 9000 + uint32_t(probes++);
      RecordBatch b;
      // 1 µs into the window, 2 µs long: |s − before| = 1000, |e − after| = 7000 or 2000.
      b.memsets.push_back(MemsetRecord{{cupti_id, uint64_t(*before) + 1000, uint64_t(*before) + 3000, 0, 1, 7}, 4, 0});
      b.external.push_back({kExternalKindEpprof, id, cupti_id});
      source.queued.push_back(b);
      return true;
    };
  }
  int probes = 0;
};

TEST_F(CudaProfilerWithProbes, GiveTheClockErrorBoundInTheMetadata) {
  uint64_t id = 0;
  const auto trace = run_scope([&](uint64_t, int64_t) {}, &id, nullptr);
  EXPECT_EQ(probes, 6);
  const auto meta = epprof::testing::plugin_metadata(trace, "cuda");
  EXPECT_EQ(meta.count("clock_error_bound_ns") ? meta.at("clock_error_bound_ns") : "<missing>", "2000");
  EXPECT_EQ(meta.count("clock_probes") ? meta.at("clock_probes") : "<missing>", "6 of 6");
  EXPECT_EQ(meta.count("clock_probe_bounds_ns") ? meta.at("clock_probe_bounds_ns") : "<missing>",
            "start 7000 2000 2000; end 7000 2000 2000");
  EXPECT_EQ(meta.count("device_tracing") ? meta.at("device_tracing") : "<missing>", "on");
  for (const auto& e : trace) EXPECT_NE(e.cat, "Memcpy") << "a clock probe reached the trace: " << e.name;
}

// No CUPTI at all: the EP's scopes run, untraced, and say why.
TEST(CudaProfilerWithoutCupti, WritesItsMetadataAndNoError) {
  epprof_plugin_t plugin{};
  EPPROF_ASSERT_OK(epprof_plugin_register(
      make_plugin(nullptr, nullptr, "CUPTI initialisation failed: CUPTI is not loadable (libcupti.so.13: cannot open)"),
      &plugin));
  epprof::testing::TempDir dir;
  const std::string path = dir.file("trace.json");
  epprof_profiler_config cfg = epprof::testing::config_for(path);
  epprof_profiler_t p{};
  EPPROF_ASSERT_OK(epprof_profiler_create(&cfg, &p));
  EPPROF_ASSERT_OK(epprof_profiler_add_plugin(p, plugin));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  const uint64_t id = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, epprof::testing::name_id("n"), id));
  EPPROF_ASSERT_OK(epprof_event_end(p, id, nullptr, 0));
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, &stats));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  epprof_status_release(epprof_plugin_unload(plugin));
  EXPECT_EQ(stats.plugin_errors, 0u);
  const auto meta = epprof::testing::plugin_metadata(epprof::testing::read_trace(path), "cuda");
  ASSERT_TRUE(meta.count("device_tracing"));
  EXPECT_EQ(meta.at("device_tracing"), "off: CUPTI initialisation failed: CUPTI is not loadable (libcupti.so.13: cannot open)");
  EXPECT_EQ(meta.at("device_records"), "0");
}

// Finding: an exception could cross the C boundary in stop_event.
TEST(CudaProfilerSlots, AnExceptionInStopEventBecomesAStatus) {
  FakeSource source;
  source.throw_on_pop = true;
  ProfilerEnv env;
  env.host = epprof_get_host_api();
  env.source = &source;
  env.device = "fake GPU";
  epprof_ep_profiler* p = create_profiler(env);
  EPPROF_ASSERT_OK(p->start_profiling(p, 0));
  EPPROF_ASSERT_OK(p->start_event(p, 5));
  epprof_status* st = nullptr;
  EXPECT_NO_THROW(st = p->stop_event(p, 5, nullptr));
  const auto r = epprof::testing::take(st);
  EXPECT_EQ(r.code, EPPROF_PLUGIN_ERROR);
  EXPECT_NE(r.message.find("stop_event: pop threw"), std::string::npos) << r.message;
  source.throw_on_pop = false;
  p->release(p);
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
