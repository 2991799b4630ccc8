// A process-lifetime table of immutable objects by dense id (1..N): ids are
// appended under the owner's lock and looked up without one. The interned
// strings and the arg sets both live in one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace epprof::core {

template <typename T, uint32_t kMax, uint32_t kPageBits = 12>
class PagedTable {
 public:
  PagedTable() = default;
  PagedTable(const PagedTable&) = delete;
  PagedTable& operator=(const PagedTable&) = delete;
  ~PagedTable() {
    for (auto& p : pages_) {
      Slot* page = p.load();
      if (!page) continue;
      for (uint32_t i = 0; i < kPageSize; ++i) delete page[i].load();
      delete[] page;
    }
  }

  // Takes `obj` as id size() + 1 and publishes it; 0 when the table is full
  // (obj is then destroyed). The caller serialises appends. Throws
  // std::bad_alloc.
  uint32_t append(std::unique_ptr<const T> obj) {
    if (count_ + 1 >= kMax) return 0;
    const uint32_t id = count_ + 1;
    Slot* page = pages_[id >> kPageBits].load(std::memory_order_relaxed);
    if (!page) {
      page = new Slot[kPageSize]();
      pages_[id >> kPageBits].store(page, std::memory_order_release);
    }
    page[id & (kPageSize - 1)].store(obj.release(), std::memory_order_release);
    count_ = id;
    published_.store(id, std::memory_order_release);
    return id;
  }

  // The object of `id`, or nullptr for an id never handed out.
  const T* get(uint32_t id) const noexcept {
    if (id == 0 || id >= kMax) return nullptr;
    const Slot* page = pages_[id >> kPageBits].load(std::memory_order_acquire);
    return page ? page[id & (kPageSize - 1)].load(std::memory_order_acquire) : nullptr;
  }

  // Whether append() handed out `id`: one word read, not the table, so the
  // hot path can validate ids (they are dense).
  bool contains(uint32_t id) const noexcept {
    return id != 0 && id <= published_.load(std::memory_order_relaxed);
  }
  // How many ids append() has handed out: they are 1..size().
  uint32_t size() const noexcept { return published_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kPageSize = 1u << kPageBits;
  using Slot = std::atomic<const T*>;

  uint32_t count_ = 0;  // guarded by the owner's lock
  alignas(64) std::atomic<uint32_t> published_{0};
  std::atomic<Slot*> pages_[(kMax + kPageSize - 1) / kPageSize] = {};
};

}  // namespace epprof::core
