// The C side of a device EP's profiler, written once for every device: the
// epprof_ep_profiler handle and its slots, each of which catches every
// exception and turns it into a status whose message starts with the
// profiler's prefix, and the scope's correlation stack on each thread.
// start_event pushes the node's id and stop_event pops it, refusing an id
// that is not the innermost open on its thread, so device work the EP
// issues in between belongs to that node (innermost()).
//
// A device profiler derives from ProfilerShell<Itself> and provides:
//
//   static constexpr const char* kPrefix = "my EP profiler: ";
//   void on_host_start(int64_t host_start_ns);     // the host's start on its clock
//   void on_start(int64_t start_offset_ns);        // start_profiling; may throw
//   epprof_status* on_event_start(uint64_t id);    // after the push: NULL or an error
//   epprof_status* on_event_stop(uint64_t id);     // after the pop
//   epprof_status* flush(epprof_event_sink* sink); // end_profiling; may throw
//
// Its destructor undoes what it holds: release deletes it.
#pragma once

#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "epprof/ep_profiler.h"

namespace epprof::ep_common {

// The correlation stacks of the calling thread, one per profiler, keyed by
// a serial number (never reused, unlike an address).
uint64_t next_profiler_serial();
void push_correlation(uint64_t serial, uint64_t id);  // may throw std::bad_alloc
bool pop_correlation(uint64_t serial, uint64_t id);   // false: `id` is not the innermost
uint64_t innermost_correlation(uint64_t serial);      // 0: none open on this thread

// Events on their way to the host's sink at end_profiling, appended 64 at a
// time and each released once appended.
class SinkBatch {
 public:
  SinkBatch(const epprof_host_api* host, epprof_event_sink* sink) : host_(host), sink_(sink) {}
  ~SinkBatch() { discard(); }
  SinkBatch(const SinkBatch&) = delete;
  SinkBatch& operator=(const SinkBatch&) = delete;

  // Adds the event `make(epprof_event**)` creates. When it fails, what is
  // pending is appended first, so nothing made before is lost, and its
  // error is returned. Else NULL, or the sink's error.
  template <class Make>
  epprof_status* add(Make&& make) {
    epprof_event* e = nullptr;
    if (epprof_status* st = make(&e)) {
      if (epprof_status* st2 = flush()) host_->status_release(st2);
      return st;
    }
    batch_.push_back(e);
    return batch_.size() == kBatch ? flush() : nullptr;
  }

  // Appends what is pending: NULL, or the sink's error.
  epprof_status* flush() {
    epprof_status* st =
        batch_.empty() ? nullptr : host_->sink_append(sink_, const_cast<const epprof_event* const*>(batch_.data()), batch_.size());
    discard();
    return st;
  }

 private:
  static constexpr size_t kBatch = 64;
  void discard() {
    for (epprof_event* e : batch_) host_->event_release(e);
    batch_.clear();
  }

  const epprof_host_api* host_;
  epprof_event_sink* sink_;
  std::vector<epprof_event*> batch_;
};

template <class Derived>
class ProfilerShell {
 public:
  epprof_ep_profiler* c() { return &handle_.c; }

 protected:
  explicit ProfilerShell(const epprof_host_api* host) : host_(host), serial_(next_profiler_serial()) {
    handle_.self = this;
    epprof_ep_profiler& c = handle_.c;
    c.abi_version = EPPROF_EP_ABI_VERSION;
    c.host_start = host_start;
    c.start_profiling = start_profiling;
    c.start_event = start_event;
    c.stop_event = stop_event;
    c.end_profiling = end_profiling;
    c.release = release;
  }
  ~ProfilerShell() = default;
  ProfilerShell(const ProfilerShell&) = delete;
  ProfilerShell& operator=(const ProfilerShell&) = delete;

  epprof_status* status(epprof_status_code code, const std::string& msg) const {
    return host_->status_create(code, (Derived::kPrefix + msg).c_str());
  }
  // The innermost event of this scope open on the calling thread; 0: none.
  uint64_t innermost() const { return innermost_correlation(serial_); }

 private:
  // The host's pointer is &handle_.c, the first member of a standard-layout struct.
  struct Handle {
    epprof_ep_profiler c;
    ProfilerShell* self;
  };
  static Derived* self(epprof_ep_profiler* p) { return static_cast<Derived*>(reinterpret_cast<Handle*>(p)->self); }

  // Every slot catches what its work throws: nothing crosses into the host.
  template <class Work>
  static epprof_status* guarded(Derived* s, const char* slot, Work&& work) noexcept {
    try {
      return work();
    } catch (const std::bad_alloc&) {
      return s->out_of_memory(slot);
    } catch (const std::exception& e) {
      return s->failed(slot, e.what());
    } catch (...) {
      return s->failed(slot, "unknown exception");
    }
  }
  epprof_status* out_of_memory(const char* slot) const noexcept {
    try {
      return status(EPPROF_OUT_OF_MEMORY, std::string(slot) + ": out of host memory");
    } catch (...) {
      return host_->status_create(EPPROF_OUT_OF_MEMORY, Derived::kPrefix);
    }
  }
  epprof_status* failed(const char* slot, const char* what) const noexcept {
    try {
      return status(EPPROF_PLUGIN_ERROR, std::string(slot) + ": " + what);
    } catch (...) {
      return out_of_memory(slot);
    }
  }

  static epprof_status* host_start(epprof_ep_profiler* p, int64_t host_start_ns) {
    Derived* s = self(p);
    return guarded(s, "host_start", [&]() -> epprof_status* {
      s->on_host_start(host_start_ns);
      return nullptr;
    });
  }
  static epprof_status* start_profiling(epprof_ep_profiler* p, int64_t start_offset_ns) {
    Derived* s = self(p);
    return guarded(s, "start_profiling", [&]() -> epprof_status* {
      s->on_start(start_offset_ns);
      return nullptr;
    });
  }
  // The id is on the scope's stack even when the EP's own work fails, so
  // that its stop_event still pairs with it.
  static epprof_status* start_event(epprof_ep_profiler* p, uint64_t id) {
    Derived* s = self(p);
    return guarded(s, "start_event", [&] {
      push_correlation(s->serial_, id);
      return s->on_event_start(id);
    });
  }
  static epprof_status* stop_event(epprof_ep_profiler* p, uint64_t id, const epprof_event*) {
    Derived* s = self(p);
    return guarded(s, "stop_event", [&] {
      if (!pop_correlation(s->serial_, id))
        return s->status(EPPROF_FAILED_PRECONDITION,
                         "stop_event(" + std::to_string(id) + ") is not the innermost event of its thread");
      return s->on_event_stop(id);
    });
  }
  static epprof_status* end_profiling(epprof_ep_profiler* p, epprof_event_sink* sink) {
    Derived* s = self(p);
    return guarded(s, "end_profiling", [&] { return s->flush(sink); });
  }
  static void release(epprof_ep_profiler* p) { delete self(p); }

  Handle handle_{};
  const epprof_host_api* host_;
  uint64_t serial_;
};

}  // namespace epprof::ep_common
