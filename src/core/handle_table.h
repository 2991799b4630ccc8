// The handles behind the C API's opaque handle structs (profilers,
// sessions, counter configurations, counting contexts): one table of N
// slots per kind of object.
//
// A handle is generation * N + slot, never 0: it names its slot
// (handle & (N - 1)), and a slot's handle changes when its object is
// removed, so a stale or made-up handle is not found instead of reaching
// another object. find() takes no lock: insert publishes the object before
// its handle, and remove retracts the handle before the object, so a
// reader that saw the handle (acquire) sees the object; find() reads the
// handle again after the object, so that a slot removed and filled again
// in between (its object then another's) is not found. Insert and remove
// take the table's mutex; so does any control path that must not see its
// object removed under it (lock()). Objects that producers use without the
// mutex (sessions, through a pin) keep their users count in the slot's
// Extra, and their remover waits it out after remove.
//
// Extra is per-slot state that lives beside the handle: a hot word read on
// every event (profilers), an owner or a users count (sessions). It is not
// reset by remove: the remover clears what it must.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace epprof::core {

struct NoExtra {};

template <class T, uint32_t N, class Extra = NoExtra, size_t Align = alignof(std::atomic<uint64_t>)>
class HandleTable {
  static_assert(N > 0 && (N & (N - 1)) == 0, "N must be a power of two");

 public:
  struct alignas(Align) Slot {
    std::atomic<uint64_t> handle{0};
    std::atomic<T*> object{nullptr};
    Extra extra;
  };

  static constexpr uint32_t kCapacity = N;
  static constexpr uint32_t index(uint64_t handle) noexcept { return uint32_t(handle & (N - 1)); }

  // The object behind `handle`, or nullptr (0, stale, or removed).
  [[gnu::always_inline]] T* find(uint64_t handle) const noexcept {
    const Slot& s = slots_[index(handle)];
    if (handle == 0 || s.handle.load(std::memory_order_acquire) != handle) return nullptr;
    // Acquire: an object stored after a remove (release) comes with the
    // retracted handle, which the second read then sees.
    T* object = s.object.load(std::memory_order_acquire);
    return s.handle.load(std::memory_order_relaxed) == handle ? object : nullptr;
  }

  // Stores `object` in a free slot and returns its new handle; 0 when all
  // N slots hold one. `named(handle)` runs before the handle is published
  // (an object that must know its own handle). Takes the mutex.
  template <class Named>
  uint64_t insert(T* object, Named&& named) {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t i = 0; i < N; ++i) {
      Slot& s = slots_[i];
      if (s.handle.load(std::memory_order_relaxed) != 0) continue;
      const uint64_t h = ++generation_ * N + i;
      named(h);
      s.object.store(object, std::memory_order_release);  // after the remove's retraction (find)
      s.handle.store(h, std::memory_order_release);
      return h;
    }
    return 0;
  }
  uint64_t insert(T* object) {
    return insert(object, [](uint64_t) {});
  }

  // Retracts `handle` and returns its object (the caller's to free), or
  // nullptr when it was not found. The caller holds the mutex (lock()).
  T* remove_locked(uint64_t handle) noexcept {
    T* object = find(handle);
    if (!object) return nullptr;
    Slot& s = slots_[index(handle)];
    s.handle.store(0, std::memory_order_release);
    s.object.store(nullptr, std::memory_order_release);
    return object;
  }
  T* remove(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    return remove_locked(handle);
  }

  // The table's mutex: held by insert and remove, and by control paths
  // that use an object while it must not be removed.
  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mu_); }

  Slot& slot(uint32_t i) noexcept { return slots_[i]; }
  const Slot& slot(uint32_t i) const noexcept { return slots_[i]; }
  Slot& slot_of(uint64_t handle) noexcept { return slots_[index(handle)]; }

 private:
  Slot slots_[N];
  std::mutex mu_;
  uint64_t generation_ = 0;  // under mu_
};

}  // namespace epprof::core
