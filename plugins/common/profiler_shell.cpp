#include "profiler_shell.h"

#include <atomic>
#include <unordered_map>
#include <vector>

namespace epprof::ep_common {
namespace {

thread_local std::unordered_map<uint64_t, std::vector<uint64_t>> t_stacks;
std::atomic<uint64_t> g_next_serial{1};

}  // namespace

uint64_t next_profiler_serial() { return g_next_serial.fetch_add(1, std::memory_order_relaxed); }

void push_correlation(uint64_t serial, uint64_t id) { t_stacks[serial].push_back(id); }

bool pop_correlation(uint64_t serial, uint64_t id) {
  auto it = t_stacks.find(serial);
  if (it == t_stacks.end() || it->second.empty() || it->second.back() != id) return false;
  it->second.pop_back();
  if (it->second.empty()) t_stacks.erase(it);  // threads may outlive many profilers
  return true;
}

uint64_t innermost_correlation(uint64_t serial) {
  auto it = t_stacks.find(serial);
  return it == t_stacks.end() || it->second.empty() ? 0 : it->second.back();
}

}  // namespace epprof::ep_common
