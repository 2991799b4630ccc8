// Helpers for the session tests: record builders and a callback that
// collects what a session delivers.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "epprof/session.h"
#include "support/test_util.h"

namespace epprof::testing {

inline epprof_record node_record(uint64_t corr, const char* node, const char* op, const char* ep = "CPU",
                                 const char* kernel = nullptr, uint32_t index = 0) {
  epprof_record r{};
  r.size = sizeof r;
  r.kind = EPPROF_RECORD_HOST_EVENT;
  r.category = EPPROF_CATEGORY_NODE;
  r.correlation_id = corr;
  r.ts_ns = epprof_clock_now_ns();
  r.dur_ns = 1000;
  r.name = name_id(node);
  r.node = name_id(node);
  r.op_type = name_id(op);
  r.ep = name_id(ep);
  r.kernel = kernel ? name_id(kernel) : 0;
  r.node_index = index;
  r.run_id = 1;
  return r;
}

inline epprof_record run_record(uint64_t corr) {
  epprof_record r{};
  r.size = sizeof r;
  r.kind = EPPROF_RECORD_HOST_EVENT;
  r.category = EPPROF_CATEGORY_SESSION;
  r.correlation_id = corr;
  r.ts_ns = epprof_clock_now_ns();
  r.dur_ns = 5000;
  r.name = name_id("model_run");
  r.node_index = EPPROF_RECORD_NO_NODE;
  return r;
}

inline epprof_record counter_record(uint64_t corr, const char* counter, double value, const char* node = nullptr,
                                    const char* op = nullptr) {
  epprof_record r{};
  r.size = sizeof r;
  r.kind = EPPROF_RECORD_COUNTER;
  r.category = EPPROF_CATEGORY_COUNTER;
  r.correlation_id = corr;
  r.ts_ns = epprof_clock_now_ns();
  r.name = name_id(counter);
  r.node = node ? name_id(node) : 0;
  r.op_type = op ? name_id(op) : 0;
  r.node_index = node ? 0 : EPPROF_RECORD_NO_NODE;
  r.value = value;
  r.counter_flags = EPPROF_COUNTER_VALUE_VALID;
  return r;
}

// Collects every delivered record; optionally sleeps per call (a slow tool).
struct Collector {
  std::mutex mu;
  std::vector<epprof_record> records;
  uint64_t dropped = 0;
  uint64_t calls = 0;
  std::chrono::microseconds delay{0};
  std::thread::id thread;

  static epprof_status* callback(void* user, epprof_session_t, const epprof_record* records, size_t count,
                                 uint64_t dropped) {
    auto* c = static_cast<Collector*>(user);
    if (c->delay.count()) std::this_thread::sleep_for(c->delay);
    std::lock_guard<std::mutex> lock(c->mu);
    c->records.insert(c->records.end(), records, records + count);
    c->dropped += dropped;
    ++c->calls;
    c->thread = std::this_thread::get_id();
    return nullptr;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return records.size();
  }
};

inline epprof_session_config collector_config(Collector& c) {
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.callback = &Collector::callback;
  cfg.callback_user_data = &c;
  return cfg;
}

// Creates and starts a session; destroys it at scope exit.
class ScopedSession {
 public:
  explicit ScopedSession(const epprof_session_config& cfg, bool start = true) {
    auto r = take(epprof_session_create(&cfg, &s_));
    EXPECT_EQ(r.code, EPPROF_OK) << r.message;
    if (r.code == EPPROF_OK && start) {
      auto r2 = take(epprof_session_start(s_));
      EXPECT_EQ(r2.code, EPPROF_OK) << r2.message;
    }
  }
  ~ScopedSession() {
    if (s_.handle) epprof_status_release(epprof_session_destroy(s_));
  }
  epprof_session_t get() const { return s_; }
  epprof_session_stats stats() const {
    epprof_session_stats st{};
    st.size = sizeof st;
    epprof_status_release(epprof_session_get_stats(s_, &st));
    return st;
  }
  void release() { s_.handle = 0; }

 private:
  epprof_session_t s_{0};
};

}  // namespace epprof::testing
