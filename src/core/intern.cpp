#include "core/intern.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/paged_table.h"

namespace epprof::core {
namespace {

struct Table {
  std::mutex mu;
  std::unordered_map<std::string_view, uint32_t> ids;  // views into the strings below
  PagedTable<std::string, kMaxInterned> strings;
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
  auto owned = std::make_unique<const std::string>(s);
  const std::string_view view(*owned);
  const uint32_t id = t.strings.append(std::move(owned));
  if (id) t.ids.emplace(view, id);
  return id;
}

bool is_interned(uint32_t id) noexcept { return table().strings.contains(id); }

uint32_t interned_count() noexcept { return table().strings.size(); }

const std::string* interned(uint32_t id) noexcept { return table().strings.get(id); }

}  // namespace epprof::core
