// The CUDA EP's CUPTI source (plugins/cuda/cupti_source.h) against a fake
// CUPTI that behaves as the real one does: it hands out buffers through the
// source's request callback, lays records out in them in CUPTI's order (an
// external-correlation record in front of each API record made under a
// pushed id, then the device records), completes them through the source's
// completion callback at a forced flush, and counts dropped records per
// buffer and in its global queue. No GPU, no libcupti.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "cupti_api.h"
#include "cupti_records.h"
#include "cupti_source.h"
#include "epprof/epprof.h"
#include "records.h"

namespace epprof::cuda {
namespace {

// Each record in a fake buffer follows this header: its size, the result
// CUPTI gives for it, and whether CUPTI cannot move past it.
struct EntryHeader {
  uint32_t size;
  int32_t result;
  uint32_t stuck;
  uint32_t pad;
};

struct Entry {
  std::vector<uint8_t> bytes;
  CUptiResult result = CUPTI_SUCCESS;
  bool stuck = false;
};

template <class Record>
Entry entry(const Record& r, CUptiResult result = CUPTI_SUCCESS, bool stuck = false) {
  Entry e;
  e.bytes.resize(sizeof r);
  std::memcpy(e.bytes.data(), &r, sizeof r);
  e.result = result;
  e.stuck = stuck;
  return e;
}

struct FakeCupti {
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  std::vector<CUpti_ActivityKind> enabled;
  std::vector<uint64_t> stack;              // the external ids pushed on this (test) thread
  std::vector<uint64_t> refuse_push;        // ids whose push fails
  CUptiResult register_result = CUPTI_SUCCESS;
  std::vector<std::vector<Entry>> pending;  // buffers completed at the next flush
  size_t dropped_per_buffer = 0;            // reported for each completed buffer's (context, stream)
  size_t dropped_global = 0;                // reported for (NULL, 0): per-thread buffers count here
  std::function<void()> on_enable;
  int flushes = 0;

  // Writes `entries` into a buffer the source hands out, and completes it.
  void complete_buffer(const std::vector<Entry>& entries) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    request(&buffer, &size, &max_records);
    ASSERT_NE(buffer, nullptr);
    size_t used = 0;
    for (const Entry& e : entries) {
      const EntryHeader h{static_cast<uint32_t>(e.bytes.size()), e.result, e.stuck ? 1u : 0u, 0};
      ASSERT_LE(used + sizeof h + e.bytes.size(), size);
      std::memcpy(buffer + used, &h, sizeof h);
      std::memcpy(buffer + used + sizeof h, e.bytes.data(), e.bytes.size());
      used += sizeof h + ((e.bytes.size() + 7) & ~size_t(7));
    }
    complete(nullptr, 0, buffer, size, used);
  }
};

FakeCupti* g_fake = nullptr;

CUptiResult CUPTIAPI fake_register(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
  if (g_fake->register_result != CUPTI_SUCCESS) return g_fake->register_result;
  g_fake->request = req;
  g_fake->complete = done;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_register_timestamp(CUpti_TimestampCallbackFunc f) {
  g_fake->timestamp = f;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_enable(CUpti_ActivityKind k) {
  g_fake->enabled.push_back(k);
  if (g_fake->on_enable) g_fake->on_enable();
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_disable(CUpti_ActivityKind k) {
  auto& e = g_fake->enabled;
  e.erase(std::remove(e.begin(), e.end(), k), e.end());
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_flush(uint32_t) {
  ++g_fake->flushes;
  auto buffers = std::move(g_fake->pending);
  g_fake->pending.clear();
  for (const auto& b : buffers) g_fake->complete_buffer(b);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_next(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* pos = buffer;
  if (*record) {
    const auto* current = reinterpret_cast<const EntryHeader*>(reinterpret_cast<uint8_t*>(*record) - sizeof(EntryHeader));
    pos = reinterpret_cast<uint8_t*>(*record) + ((current->size + 7) & ~uint32_t(7));
  }
  if (pos + sizeof(EntryHeader) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  const auto* h = reinterpret_cast<const EntryHeader*>(pos);
  if (h->stuck) return static_cast<CUptiResult>(h->result);  // CUPTI does not move past it
  *record = reinterpret_cast<CUpti_Activity*>(pos + sizeof(EntryHeader));
  return static_cast<CUptiResult>(h->result);
}
CUptiResult CUPTIAPI fake_dropped(CUcontext context, uint32_t, size_t* dropped) {
  size_t& n = context == nullptr && g_fake->dropped_global ? g_fake->dropped_global : g_fake->dropped_per_buffer;
  *dropped = n;
  n = 0;  // CUPTI resets the count it reports
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_push(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) return CUPTI_ERROR_INVALID_PARAMETER;
  for (uint64_t r : g_fake->refuse_push)
    if (r == id) return CUPTI_ERROR_INVALID_PARAMETER;
  g_fake->stack.push_back(id);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_pop(CUpti_ExternalCorrelationKind, uint64_t* last) {
  if (g_fake->stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  *last = g_fake->stack.back();
  g_fake->stack.pop_back();
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_result_string(CUptiResult r, const char** s) {
  *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                            : "CUPTI_ERROR_SOMETHING";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI fake_callback_name(CUpti_CallbackDomain domain, uint32_t, const char** name) {
  *name = domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuLaunchKernel" : "cudaLaunchKernel";
  return CUPTI_SUCCESS;
}

CuptiApi fake_api() {
  CuptiApi a;
  a.activity_register_callbacks = fake_register;
  a.activity_register_timestamp_callback = fake_register_timestamp;
  a.activity_enable = fake_enable;
  a.activity_disable = fake_disable;
  a.activity_flush_all = fake_flush;
  a.activity_get_next_record = fake_next;
  a.activity_get_num_dropped_records = fake_dropped;
  a.activity_push_external_correlation_id = fake_push;
  a.activity_pop_external_correlation_id = fake_pop;
  a.get_result_string = fake_result_string;
  a.get_callback_name = fake_callback_name;
  return a;
}

// ---- CUPTI's record structs, as CUPTI fills them ----

CUpti_ActivityAPI api_record(uint32_t id, uint64_t start, bool driver) {
  CUpti_ActivityAPI a{};
  a.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = driver ? 307 : 211;
  a.correlationId = id;
  a.start = start;
  a.end = start + 5;
  a.threadId = 77;
  return a;
}

CUpti_ActivityExternalCorrelation external_record(uint64_t external_id, uint32_t id) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = external_id;
  e.correlationId = id;
  return e;
}

CUpti_ActivityKernel10 kernel_record(uint32_t id, uint64_t start, const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = id;
  k.start = start;
  k.end = start + 100;
  k.streamId = 7;
  k.name = name;
  return k;
}

CUpti_ActivityMemcpy6 memcpy_record(uint32_t driver_id, uint32_t runtime_id, uint64_t start) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 4096;
  m.correlationId = driver_id;
  m.runtimeCorrelationId = runtime_id;
  m.start = start;
  m.end = start + 50;
  m.streamId = 7;
  return m;
}

CUpti_ActivityMemset4 memset_record(uint32_t id, uint64_t start) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = 256;
  m.correlationId = id;
  m.start = start;
  m.end = start + 10;
  m.streamId = 7;
  return m;
}

class CuptiSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake = &fake;
    api = fake_api();
    std::string error;
    source = CuptiSource::create(api, epprof_get_host_api(), &error);
    ASSERT_NE(source, nullptr) << error;
  }
  void TearDown() override {
    delete source;
    g_fake = nullptr;
  }
  bool is_enabled(CUpti_ActivityKind k) const {
    return std::find(fake.enabled.begin(), fake.enabled.end(), k) != fake.enabled.end();
  }

  FakeCupti fake;
  CuptiApi api;
  CuptiSource* source = nullptr;
};

// Finding: without the API kinds CUPTI writes no external-correlation record.
TEST_F(CuptiSourceTest, TheFirstAttachEnablesTheApiKindsTheJoinNeedsAndTheLastDetachDisablesAll) {
  RecordConverter a, b;
  std::string error;
  ASSERT_TRUE(source->attach(&a, &error)) << error;
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                               CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                               CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET})
    EXPECT_TRUE(is_enabled(k)) << "activity kind " << k << " is not enabled";
  const size_t kinds = fake.enabled.size();
  ASSERT_TRUE(source->attach(&b, &error)) << error;
  EXPECT_EQ(fake.enabled.size(), kinds) << "the second attach enabled again";
  source->detach(&a);
  EXPECT_EQ(fake.enabled.size(), kinds) << "disabled while a sink is attached";
  source->detach(&b);
  EXPECT_TRUE(fake.enabled.empty());
  EXPECT_EQ(fake.flushes, 2);
}

// One node, through the real source: CUPTI's order of records, driver and
// runtime ids, a cuBLAS-style driver launch; everything attributed.
TEST_F(CuptiSourceTest, RecordsInCuptisOrderReachTheConverterAndJoinToTheNode) {
  RecordConverter sink;
  std::string error;
  ASSERT_TRUE(source->attach(&sink, &error)) << error;
  const uint64_t node = 4242;
  ASSERT_TRUE(source->push_external_id(node, &error)) << error;
  EXPECT_EQ(fake.stack, std::vector<uint64_t>{node});
  // cudaMemcpyAsync (runtime 10) → cuMemcpyHtoDAsync (driver 11); cudaLaunchKernel
  // (runtime 12); cuLaunchKernel from cuBLAS (driver 13); cudaMemsetAsync (runtime 14).
  fake.pending.push_back({
      entry(external_record(node, 10)), entry(api_record(10, 1000, false)),
      entry(external_record(node, 11)), entry(api_record(11, 1001, true)),
      entry(external_record(node, 12)), entry(api_record(12, 1100, false)),
      entry(external_record(node, 13)), entry(api_record(13, 1200, true)),
      entry(external_record(node, 14)), entry(api_record(14, 1300, false)),
  });
  fake.pending.push_back({entry(memcpy_record(11, 10, 1010)), entry(kernel_record(12, 1150, "relu")),
                          entry(kernel_record(13, 1250, "_Z12sgemm_kernelv")), entry(memset_record(14, 1310))});
  ASSERT_TRUE(source->pop_external_id(node, &error)) << error;
  EXPECT_TRUE(fake.stack.empty());
  source->detach(&sink);  // the forced flush completes both buffers

  ConversionStats st;
  const auto ev = sink.convert(TimeBase{0, 0}, 0, INT64_MAX / 2, &st);
  ASSERT_EQ(ev.size(), 4u);
  for (const auto& e : ev) EXPECT_EQ(e.correlation_id, node) << e.name;
  EXPECT_EQ(ev[2].name, "sgemm_kernel()");
  EXPECT_EQ(st.unattributed, 0u);
  EXPECT_EQ(st.api, 5u);
  EXPECT_EQ(st.with_call, 4u);
  EXPECT_EQ(st.before_call, 0u);
  EXPECT_EQ(source->dropped_records(), 0u);
}

// Finding: a record CUPTI cannot read stopped the loop and silently dropped
// the rest of the buffer.
TEST_F(CuptiSourceTest, AnUnreadableRecordIsCountedAndTheRestOfTheBufferIsRead) {
  RecordConverter sink;
  std::string error;
  ASSERT_TRUE(source->attach(&sink, &error)) << error;
  fake.dropped_per_buffer = 2;  // CUPTI ran out of buffer space for two records
  fake.dropped_global = 3;      // and per-thread buffers lost three, counted in the global queue
  fake.pending.push_back({entry(kernel_record(1, 100, "a")), entry(kernel_record(2, 200, "bad"), CUPTI_ERROR_INVALID_KIND),
                          entry(kernel_record(3, 300, "c"))});
  source->detach(&sink);
  const auto ev = sink.convert(TimeBase{0, 0}, 0, INT64_MAX / 2, nullptr);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].name, "a");
  EXPECT_EQ(ev[1].name, "c");
  EXPECT_EQ(source->dropped_records(), 1u + 2u + 3u);
}

TEST_F(CuptiSourceTest, WhereCuptiCannotMoveOnTheRestIsCountedAsLost) {
  RecordConverter sink;
  std::string error;
  ASSERT_TRUE(source->attach(&sink, &error)) << error;
  fake.pending.push_back({entry(kernel_record(1, 100, "a")),
                          entry(kernel_record(2, 200, "stuck"), CUPTI_ERROR_INVALID_KIND, /*stuck=*/true),
                          entry(kernel_record(3, 300, "never read"))});
  source->detach(&sink);
  const auto ev = sink.convert(TimeBase{0, 0}, 0, INT64_MAX / 2, nullptr);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].name, "a");
  EXPECT_EQ(source->dropped_records(), 1u);
}

// Finding: the source enabled CUPTI's kinds while holding the lock its
// completion callback takes. CUPTI may complete a buffer on its own thread
// while it holds its own lock, which attach's enable then waits for.
TEST_F(CuptiSourceTest, CuptiCompletingABufferDuringEnableDoesNotDeadlock) {
  RecordConverter early, sink;
  std::string error;
  fake.on_enable = [&] {
    fake.on_enable = nullptr;
    std::thread cupti_thread([&] { fake.complete_buffer({entry(kernel_record(1, 100, "k"))}); });
    cupti_thread.join();  // CUPTI's enable returns only when its thread is done
  };
  auto attached = std::async(std::launch::async, [&] { return source->attach(&sink, &error); });
  if (attached.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "attach deadlocked with CUPTI's completion callback";
    std::fflush(stdout);
    std::_Exit(1);  // the stuck threads cannot be joined
  }
  EXPECT_TRUE(attached.get()) << error;
  source->detach(&sink);
}

// Finding: a failed push was not rolled back, so the later pop removed the
// enclosing node's id from CUPTI.
TEST_F(CuptiSourceTest, AFailedPushIsRolledBackSoItsPopLeavesTheOuterIdInPlace) {
  std::string error;
  ASSERT_TRUE(source->push_external_id(1, &error)) << error;
  fake.refuse_push = {2};
  EXPECT_FALSE(source->push_external_id(2, &error));
  EXPECT_NE(error.find("cuptiActivityPushExternalCorrelationId"), std::string::npos) << error;
  EXPECT_EQ(fake.stack, std::vector<uint64_t>{1});
  error.clear();
  EXPECT_TRUE(source->pop_external_id(2, &error)) << error;  // its stop_event still comes
  EXPECT_EQ(fake.stack, std::vector<uint64_t>{1}) << "the pop of the failed push removed the outer id";
  EXPECT_TRUE(source->pop_external_id(1, &error)) << error;
  EXPECT_TRUE(fake.stack.empty());
}

TEST_F(CuptiSourceTest, TheTimestampCallbackReadsTheHostClock) {
  ASSERT_NE(fake.timestamp, nullptr);
  const int64_t before = epprof_clock_now_ns();
  const auto t = static_cast<int64_t>(fake.timestamp());
  EXPECT_GE(t, before);
  EXPECT_LE(t, epprof_clock_now_ns());
}

TEST_F(CuptiSourceTest, ApiRecordsCarryCuptisNameForTheCall) {
  RecordConverter sink;
  sink.set_export_api(true);
  std::string error;
  ASSERT_TRUE(source->attach(&sink, &error)) << error;
  fake.pending.push_back({entry(api_record(5, 100, true)), entry(api_record(6, 200, false))});
  source->detach(&sink);
  const auto ev = sink.convert(TimeBase{0, 0}, 0, INT64_MAX / 2, nullptr);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].name, "cuLaunchKernel");
  EXPECT_EQ(ev[1].name, "cudaLaunchKernel");
}

TEST(CuptiSource, ARefusedRegistrationNamesTheCallAndCuptisResult) {
  FakeCupti fake;
  fake.register_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;  // another CUPTI client
  g_fake = &fake;
  const CuptiApi api = fake_api();
  std::string error;
  CuptiSource* s = CuptiSource::create(api, epprof_get_host_api(), &error);
  g_fake = nullptr;
  delete s;
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(error.find("cuptiActivityRegisterCallbacks"), std::string::npos) << error;
  EXPECT_NE(error.find("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), std::string::npos) << error;
}

TEST(CuptiApi, AMissingLibraryIsAClearError) {
  CuptiApi api;
  std::string error;
  EXPECT_FALSE(load_cupti(&api, &error, "libcupti-does-not-exist.so.13"));
  EXPECT_NE(error.find("CUPTI is not loadable"), std::string::npos) << error;
  EXPECT_NE(error.find("libcupti-does-not-exist.so.13"), std::string::npos) << error;
  EXPECT_EQ(api.activity_enable, nullptr);
}

TEST(CuptiApi, ALibraryWithoutCuptisFunctionsNamesTheFirstMissing) {
  CuptiApi api;
  std::string error;
  EXPECT_FALSE(load_cupti(&api, &error, "libm.so.6"));
  EXPECT_NE(error.find("lacks cuptiActivityRegisterCallbacks"), std::string::npos) << error;
}

}  // namespace
}  // namespace epprof::cuda
