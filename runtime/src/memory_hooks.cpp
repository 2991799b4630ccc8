#include "memory_hooks.h"

#include <atomic>
#include <mutex>
#include <thread>

namespace epprof::rt::memory {
namespace {

constexpr int kSlots = 8;
std::atomic<Listener*> g_slots[kSlots];
std::atomic<int> g_count{0};     // listeners registered
std::atomic<int> g_inflight{0};  // reports reading the slots now
std::mutex g_mu;                 // add and remove

template <typename F>
void each(F&& f) noexcept {
  if (g_count.load(std::memory_order_relaxed) == 0) return;
  // Sequentially consistent: remove_listener's clearing of a slot and its
  // reading of g_inflight must not pass this increment and slot read.
  g_inflight.fetch_add(1);
  for (auto& slot : g_slots)
    if (Listener* l = slot.load()) f(l);
  g_inflight.fetch_sub(1);
}

}  // namespace

bool add_listener(Listener* l) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& slot : g_slots)
    if (!slot.load(std::memory_order_relaxed)) {
      slot.store(l, std::memory_order_release);
      g_count.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  return false;
}

void remove_listener(Listener* l) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& slot : g_slots)
      if (slot.load(std::memory_order_relaxed) == l) {
        slot.store(nullptr);
        g_count.fetch_sub(1, std::memory_order_relaxed);
      }
  }
  // A report that loaded `l` before it was cleared may still be calling it.
  while (g_inflight.load() != 0) std::this_thread::yield();
}

void report_allocated(const void* p, size_t bytes) noexcept {
  each([&](Listener* l) { l->allocated(p, bytes); });
}

void report_freed(const void* p) noexcept {
  each([&](Listener* l) { l->freed(p); });
}

}  // namespace epprof::rt::memory
