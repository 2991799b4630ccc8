#include "cupti_source.h"

#include <algorithm>
#include <cstdlib>
#include <exception>

#include "cupti_records.h"

namespace epprof::cuda {

namespace {

constexpr size_t kBufferBytes = 4u << 20;
constexpr size_t kBufferAlign = 8;

// The source CUPTI's callbacks reach, and what they need of it.
std::atomic<CuptiSource*> g_source{nullptr};
std::atomic<const epprof_host_api*> g_host{nullptr};
std::atomic<const CuptiApi*> g_api{nullptr};

uint64_t CUPTIAPI host_timestamp() {
  const epprof_host_api* host = g_host.load(std::memory_order_acquire);
  return host ? static_cast<uint64_t>(host->clock_now_ns()) : 0;
}

const char* callback_name(bool driver, uint32_t cbid) {
  const CuptiApi* api = g_api.load(std::memory_order_acquire);
  const char* name = nullptr;
  if (api && api->get_callback_name &&
      api->get_callback_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) !=
          CUPTI_SUCCESS)
    return nullptr;
  return name;
}

thread_local SharedIdStack t_external;

}  // namespace

uint64_t drain_buffer(const CuptiApi& api, uint8_t* buffer, size_t valid_size, RecordBatch* batch,
                      CallbackNamer namer) noexcept {
  uint64_t lost = 0;
  CUpti_Activity* record = nullptr;
  // A record is at least 8 bytes: more steps than that means CUPTI is not moving.
  for (size_t step = 0; step <= valid_size / 8; ++step) {
    CUpti_Activity* const previous = record;
    const CUptiResult r = api.activity_get_next_record(buffer, valid_size, &record);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) return lost;
    if (r != CUPTI_SUCCESS) {
      ++lost;  // incomplete or invalid (CUPTI_ERROR_INVALID_KIND)
      if (record == nullptr || record == previous) return lost;  // CUPTI cannot move on
      continue;
    }
    try {
      parse_cupti_record(record, batch, namer);
    } catch (...) {
      ++lost;
    }
  }
  return lost + 1;
}

CuptiSource* CuptiSource::create(const CuptiApi& api, const epprof_host_api* host, std::string* error) {
  if (g_source.load() != nullptr) {
    *error = "a CUPTI source exists already";
    return nullptr;
  }
  auto* s = new CuptiSource(api);
  g_host.store(host, std::memory_order_release);
  g_api.store(&s->api_, std::memory_order_release);
  g_source.store(s, std::memory_order_release);
  // The timestamp callback first: records made before it use CUPTI's own clock.
  if (!s->check(api.activity_register_timestamp_callback(&host_timestamp), "cuptiActivityRegisterTimestampCallback",
                error) ||
      !s->check(api.activity_register_callbacks(&buffer_requested, &buffer_completed),
                "cuptiActivityRegisterCallbacks", error)) {
    delete s;
    return nullptr;
  }
  return s;
}

CuptiSource::~CuptiSource() {
  CuptiSource* self = this;
  if (g_source.compare_exchange_strong(self, nullptr)) {
    g_api.store(nullptr);
    g_host.store(nullptr);
  }
}

bool CuptiSource::check(CUptiResult r, const char* call, std::string* error) const {
  if (r == CUPTI_SUCCESS) return true;
  *error = std::string(call) + " failed: " + cupti_result_name(api_, r);
  return false;
}

bool CuptiSource::attach(RecordConverter* sink, std::string* error) {
  std::lock_guard<std::mutex> control(control_mu_);
  if (attached_ == 0) {
    for (size_t i = 0; i < std::size(kTracedKinds); ++i) {
      if (!check(api_.activity_enable(kTracedKinds[i]), "cuptiActivityEnable", error)) {
        *error += " (activity kind " + std::to_string(static_cast<int>(kTracedKinds[i])) + ")";
        for (size_t j = 0; j < i; ++j) api_.activity_disable(kTracedKinds[j]);
        return false;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(sinks_mu_);
    sinks_.push_back(sink);
  }
  ++attached_;
  return true;
}

void CuptiSource::detach(RecordConverter* sink) {
  std::lock_guard<std::mutex> control(control_mu_);
  // CUPTI completes its buffers through buffer_completed, which takes sinks_mu_ (not held here).
  api_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  count_global_drops();
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(sinks_mu_);
    auto it = std::find(sinks_.begin(), sinks_.end(), sink);
    if (it != sinks_.end()) {
      sinks_.erase(it);
      found = true;
    }
  }
  if (found && --attached_ == 0)
    for (CUpti_ActivityKind k : kTracedKinds) api_.activity_disable(k);
}

void CuptiSource::count_global_drops() noexcept {
  size_t dropped = 0;
  if (api_.activity_get_num_dropped_records(nullptr, 0, &dropped) == CUPTI_SUCCESS)
    dropped_.fetch_add(dropped, std::memory_order_relaxed);
}

bool CuptiSource::push_external_id(uint64_t id, std::string* error) {
  if (!t_external.enter(id)) return true;  // already pushed by another scope on this thread
  if (check(api_.activity_push_external_correlation_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id),
            "cuptiActivityPushExternalCorrelationId", error))
    return true;
  // CUPTI holds nothing for this id: its pop must not pop CUPTI's next one.
  t_external.mark_not_pushed();
  return false;
}

bool CuptiSource::pop_external_id(uint64_t id, std::string* error) {
  switch (t_external.leave(id)) {
    case SharedIdStack::Leave::kStillHeld: return true;
    case SharedIdStack::Leave::kMismatch:
      *error = "external correlation id " + std::to_string(id) + " is not the innermost of its thread";
      return false;
    case SharedIdStack::Leave::kPop: break;
  }
  uint64_t last = 0;
  if (!check(api_.activity_pop_external_correlation_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last),
             "cuptiActivityPopExternalCorrelationId", error))
    return false;
  if (last != id) {
    *error = "CUPTI popped external id " + std::to_string(last) + ", expected " + std::to_string(id);
    return false;
  }
  return true;
}

std::string CuptiSource::clock_description() const {
  return "host CLOCK_MONOTONIC ns: CUPTI reads the host clock through cuptiActivityRegisterTimestampCallback, so "
         "API records are exact and GPU timestamps are CUPTI's mapping of the GPU clock onto it; the error bound "
         "comes from clock probes (a 4-byte memset between two host clock reads) at the scope's start and end";
}

void CUPTIAPI CuptiSource::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // A refused buffer (null) makes CUPTI drop records, and count them.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI CuptiSource::buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                                            size_t valid_size) {
  CuptiSource* s = g_source.load(std::memory_order_acquire);
  if (s == nullptr) {
    std::free(buffer);
    return;
  }
  uint64_t lost = 0;
  try {
    RecordBatch batch;
    if (buffer && valid_size > 0) lost += drain_buffer(s->api_, buffer, valid_size, &batch, &callback_name);
    size_t dropped = 0;
    if (s->api_.activity_get_num_dropped_records(context, stream_id, &dropped) == CUPTI_SUCCESS) lost += dropped;
    if (batch.size() > 0) s->deliver(batch);
  } catch (...) {
    ++lost;  // the batch itself could not be built
  }
  s->dropped_.fetch_add(lost, std::memory_order_relaxed);
  std::free(buffer);
}

void CuptiSource::deliver(const RecordBatch& batch) noexcept {
  std::lock_guard<std::mutex> lock(sinks_mu_);
  for (RecordConverter* sink : sinks_) {
    try {
      sink->add(batch);
    } catch (...) {
      dropped_.fetch_add(batch.size(), std::memory_order_relaxed);
    }
  }
}

ActivitySource* cupti_source(const epprof_host_api* host, std::string* error) {
  static std::mutex mu;
  static ActivitySource* source = nullptr;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mu);
  if (source || !failure.empty()) {
    if (!source) *error = failure;
    return source;
  }
  if (const char* v = std::getenv("EPPROF_CUDA_BREAK_CUPTI"); v && *v && *v != '0') {
    failure = "cuptiActivityRegisterCallbacks failed: CUPTI_ERROR_NOT_INITIALIZED (injected by EPPROF_CUDA_BREAK_CUPTI)";
  } else {
    static CuptiApi api;  // outlives the source, which CUPTI may call back until the process exits
    if (load_cupti(&api, &failure)) source = CuptiSource::create(api, host, &failure);
  }
  if (!source) *error = failure;
  return source;
}

}  // namespace epprof::cuda
