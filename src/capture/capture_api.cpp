// C entry points of epprof/capture.h and the listeners' handle table.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "base/status.h"
#include "capture/listener.h"
#include "epprof/capture.h"

namespace epprof::capture {
namespace {

constexpr uint64_t kMaxListeners = 8;  // a power of two: handle = generation << 3 | slot

// epprof_listener_pending reads only `handle` and `pending`, which live as
// long as the process, so it needs no lock and never sees a freed listener.
struct Slot {
  std::atomic<uint64_t> handle{0};
  std::atomic<uint32_t> pending{0};
  std::shared_ptr<Listener> listener;  // under g_mu
};

// Never destroyed: a host that exits without stopping its listener must
// not have it joined from a static destructor.
Slot* const g_slots = new Slot[kMaxListeners];
std::mutex& g_mu = *new std::mutex;
uint64_t g_generation = 0;

std::shared_ptr<Listener> find(epprof_listener_t l) {
  if (l.handle == 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  Slot& s = g_slots[l.handle & (kMaxListeners - 1)];
  if (s.handle.load(std::memory_order_relaxed) != l.handle) return nullptr;
  return s.listener;
}

epprof_status* not_found(const char* fn) {
  return base::make_status(EPPROF_NOT_FOUND, std::string(fn) + ": unknown or stopped listener handle");
}

}  // namespace
}  // namespace epprof::capture

namespace ec = epprof::capture;
using epprof::base::make_status;
using epprof::base::null_argument;

extern "C" {

EPPROF_API epprof_status* epprof_listener_start(const epprof_listener_config* config, epprof_listener_t* out) {
  EPPROF_API_BEGIN
  if (!config) return null_argument(fn, "config");
  if (!out) return null_argument(fn, "out");
  if (config->size < offsetof(epprof_listener_config, socket_dir) + sizeof(const char*))
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": config->size (" + std::to_string(config->size) +
                                                    ") is too small: set it to sizeof(epprof_listener_config)");
  epprof_listener_config c{};
  std::memcpy(&c, config, std::min(config->size, sizeof c));
  ec::ListenerOptions options;
  if (c.socket_dir) options.socket_dir = c.socket_dir;
  if (c.request_timeout_ms) options.request_timeout_ms = int(std::min<uint32_t>(c.request_timeout_ms, 3600000));

  std::lock_guard<std::mutex> lock(ec::g_mu);
  uint64_t free_slot = ec::kMaxListeners;
  for (uint64_t i = 0; i < ec::kMaxListeners && free_slot == ec::kMaxListeners; ++i)
    if (ec::g_slots[i].handle.load(std::memory_order_relaxed) == 0) free_slot = i;
  if (free_slot == ec::kMaxListeners)
    return make_status(EPPROF_RESOURCE_EXHAUSTED,
                       std::string(fn) + ": " + std::to_string(ec::kMaxListeners) + " listeners exist already");
  ec::Slot& slot = ec::g_slots[free_slot];
  slot.pending.store(0, std::memory_order_relaxed);
  std::unique_ptr<ec::Listener> listener;
  if (epprof_status* st = ec::Listener::start(options, &slot.pending, &listener)) return st;
  slot.listener = std::move(listener);
  const uint64_t h = (++ec::g_generation << 3) | free_slot;
  slot.handle.store(h, std::memory_order_release);
  out->handle = h;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_listener_get_socket_path(epprof_listener_t listener, const char** out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  auto l = ec::find(listener);
  if (!l) return ec::not_found(fn);
  *out = l->socket_path().c_str();
  return nullptr;
  EPPROF_API_END
}

EPPROF_API uint32_t epprof_listener_pending(epprof_listener_t listener) {
  const ec::Slot& s = ec::g_slots[listener.handle & (ec::kMaxListeners - 1)];
  if (listener.handle == 0 || s.handle.load(std::memory_order_relaxed) != listener.handle) return 0;
  return s.pending.load(std::memory_order_relaxed);
}

EPPROF_API epprof_status* epprof_listener_take(epprof_listener_t listener, epprof_capture_request* out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  if (out->size < offsetof(epprof_capture_request, scope_name) + sizeof(const char*))
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": out->size (" + std::to_string(out->size) +
                                                    ") is too small: set it to sizeof(epprof_capture_request)");
  auto l = ec::find(listener);
  if (!l) return ec::not_found(fn);
  return l->take(out);
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_listener_complete(epprof_listener_t listener, uint64_t request_id,
                                                   const epprof_capture_result* result) {
  EPPROF_API_BEGIN
  if (!result) return null_argument(fn, "result");
  if (result->size < offsetof(epprof_capture_result, message) + sizeof(const char*))
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": result->size (" + std::to_string(result->size) +
                                                    ") is too small: set it to sizeof(epprof_capture_result)");
  epprof_capture_result r{};
  std::memcpy(&r, result, std::min(result->size, sizeof r));
  if (r.code > EPPROF_MULTIPASS)
    return make_status(EPPROF_INVALID_ARGUMENT,
                       std::string(fn) + ": result->code " + std::to_string(r.code) + " is not an epprof_status_code");
  auto l = ec::find(listener);
  if (!l) return ec::not_found(fn);
  return l->complete(request_id, r);
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_listener_stop(epprof_listener_t listener) {
  EPPROF_API_BEGIN
  std::shared_ptr<ec::Listener> l;
  {
    std::lock_guard<std::mutex> lock(ec::g_mu);
    ec::Slot& s = ec::g_slots[listener.handle & (ec::kMaxListeners - 1)];
    if (listener.handle == 0 || s.handle.load(std::memory_order_relaxed) != listener.handle)
      return ec::not_found(fn);
    s.handle.store(0, std::memory_order_release);
    s.pending.store(0, std::memory_order_relaxed);
    l = std::move(s.listener);
  }
  l->stop();
  return nullptr;
  EPPROF_API_END
}

}  // extern "C"
