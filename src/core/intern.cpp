#include "core/intern.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace epprof::core {
namespace {

constexpr uint32_t kPageBits = 12;
constexpr uint32_t kPageSize = 1u << kPageBits;
constexpr uint32_t kPages = kMaxInterned / kPageSize;

using Page = std::atomic<const std::string*>[kPageSize];

struct Table {
  std::mutex mu;
  std::unordered_map<std::string_view, uint32_t> ids;  // views into the strings below
  uint32_t count = 0;                                   // ids 1..count are used
  // count, published after the string is in place: the hot path's validity
  // check reads this one word instead of the string table.
  alignas(64) std::atomic<uint32_t> published{0};
  std::atomic<Page*> pages[kPages] = {};

  ~Table() {
    for (auto& p : pages) {
      Page* page = p.load();
      if (!page) continue;
      for (auto& s : *page) delete s.load();
      delete[] reinterpret_cast<std::atomic<const std::string*>*>(page);
    }
  }
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

uint32_t intern(std::string_view s) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (auto it = t.ids.find(s); it != t.ids.end()) return it->second;
  if (t.count + 1 >= kMaxInterned) return 0;
  uint32_t id = t.count + 1;
  Page* page = t.pages[id >> kPageBits].load(std::memory_order_relaxed);
  if (!page) {
    auto* fresh = new std::atomic<const std::string*>[kPageSize]();
    page = reinterpret_cast<Page*>(fresh);
    t.pages[id >> kPageBits].store(page, std::memory_order_release);
  }
  auto owned = std::make_unique<const std::string>(s);
  t.ids.emplace(std::string_view(*owned), id);
  (*page)[id & (kPageSize - 1)].store(owned.release(), std::memory_order_release);
  t.count = id;
  t.published.store(id, std::memory_order_release);
  return id;
}

bool is_interned(uint32_t id) noexcept {
  return id != 0 && id <= table().published.load(std::memory_order_relaxed);
}

const std::string* interned(uint32_t id) noexcept {
  if (id == 0 || id >= kMaxInterned) return nullptr;
  Page* page = table().pages[id >> kPageBits].load(std::memory_order_acquire);
  if (!page) return nullptr;
  return (*page)[id & (kPageSize - 1)].load(std::memory_order_acquire);
}

}  // namespace epprof::core
