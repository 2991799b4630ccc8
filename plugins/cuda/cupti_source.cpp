#include "cupti_source.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "cupti_records.h"

namespace epprof::cuda {

namespace {

constexpr size_t kBufferBytes = 4u << 20;
constexpr size_t kBufferAlign = 8;

std::atomic<const epprof_host_api*> g_host{nullptr};

uint64_t CUPTIAPI host_timestamp() {
  const epprof_host_api* host = g_host.load(std::memory_order_acquire);
  return host ? static_cast<uint64_t>(host->clock_now_ns()) : 0;
}

thread_local SharedIdStack t_external;

class CuptiSource final : public ActivitySource {
 public:
  bool init(std::string* error) {
    if (const char* v = std::getenv("EPPROF_CUDA_BREAK_CUPTI"); v && *v && *v != '0') {
      *error = "cuptiActivityRegisterCallbacks failed: CUPTI_ERROR_NOT_INITIALIZED (injected by EPPROF_CUDA_BREAK_CUPTI)";
      return false;
    }
    // The timestamp callback first: records made before it use CUPTI's own clock.
    if (!check(cuptiActivityRegisterTimestampCallback(&host_timestamp), "cuptiActivityRegisterTimestampCallback", error))
      return false;
    return check(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed), "cuptiActivityRegisterCallbacks",
                 error);
  }

  bool attach(RecordConverter* sink, std::string* error) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (sinks_.empty()) {
      for (size_t i = 0; i < std::size(kTracedKinds); ++i) {
        if (!check(cuptiActivityEnable(kTracedKinds[i]), "cuptiActivityEnable", error)) {
          for (size_t j = 0; j < i; ++j) cuptiActivityDisable(kTracedKinds[j]);
          return false;
        }
      }
    }
    sinks_.push_back(sink);
    return true;
  }

  void detach(RecordConverter* sink) override {
    // Not under mu_: the flush delivers through buffer_completed, which takes it.
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(sinks_.begin(), sinks_.end(), sink);
    if (it == sinks_.end()) return;
    sinks_.erase(it);
    if (sinks_.empty())
      for (CUpti_ActivityKind k : kTracedKinds) cuptiActivityDisable(k);
  }

  uint64_t dropped_records() const override { return dropped_.load(std::memory_order_relaxed); }

  bool push_external_id(uint64_t id, std::string* error) override {
    if (!t_external.enter(id)) return true;
    return check(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id),
                 "cuptiActivityPushExternalCorrelationId", error);
  }

  bool pop_external_id(uint64_t id, std::string* error) override {
    switch (t_external.leave(id)) {
      case SharedIdStack::Leave::kStillHeld: return true;
      case SharedIdStack::Leave::kMismatch:
        *error = "external correlation id " + std::to_string(id) + " is not the innermost of its thread";
        return false;
      case SharedIdStack::Leave::kPop: break;
    }
    uint64_t last = 0;
    if (!check(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last),
               "cuptiActivityPopExternalCorrelationId", error))
      return false;
    if (last != id) {
      *error = "CUPTI popped external id " + std::to_string(last) + ", expected " + std::to_string(id);
      return false;
    }
    return true;
  }

  std::string clock_description() const override {
    return "host CLOCK_MONOTONIC ns: CUPTI calls the host clock through cuptiActivityRegisterTimestampCallback "
           "and interpolates GPU timestamps onto it";
  }

 private:
  static bool check(CUptiResult r, const char* call, std::string* error) {
    if (r == CUPTI_SUCCESS) return true;
    *error = std::string(call) + " failed: " + cupti_result_name(r);
    return false;
  }

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
  }

  static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                                        size_t valid_size);
  void deliver(const RecordBatch& batch) {
    std::lock_guard<std::mutex> lock(mu_);
    for (RecordConverter* s : sinks_) s->add(batch);
  }

  std::mutex mu_;
  std::vector<RecordConverter*> sinks_;
  std::atomic<uint64_t> dropped_{0};

  friend ActivitySource* epprof::cuda::cupti_source(const epprof_host_api*, std::string*);
};

CuptiSource* g_source = nullptr;  // never freed: CUPTI may call back until the process exits
std::mutex g_init_mu;

void CUPTIAPI CuptiSource::buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                                            size_t valid_size) {
  RecordBatch batch;
  CUpti_Activity* record = nullptr;
  if (valid_size > 0)
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) parse_cupti_record(record, &batch);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS && g_source)
    g_source->dropped_.fetch_add(dropped, std::memory_order_relaxed);
  std::free(buffer);
  if (g_source && batch.size() > 0) g_source->deliver(batch);
}

}  // namespace

std::string cupti_result_name(int result) {
  const char* s = nullptr;
  if (cuptiGetResultString(static_cast<CUptiResult>(result), &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(result);
}

ActivitySource* cupti_source(const epprof_host_api* host, std::string* error) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (g_source) return g_source;
  g_host.store(host, std::memory_order_release);
  auto* s = new CuptiSource;
  if (!s->init(error)) {
    delete s;
    return nullptr;
  }
  g_source = s;
  return s;
}

}  // namespace epprof::cuda
