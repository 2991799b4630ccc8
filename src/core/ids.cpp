#include "core/ids.h"

#include <atomic>

namespace epprof::core {
namespace {

constexpr uint64_t kBlock = 4096;
std::atomic<uint64_t> g_next_block{1};

struct IdBlock {
  uint64_t next = 0;
  uint64_t end = 0;
};
thread_local IdBlock t_block;

}  // namespace

uint64_t next_correlation_id() noexcept {
  IdBlock& b = t_block;
  if (__builtin_expect(b.next == b.end, 0)) {
    b.next = g_next_block.fetch_add(kBlock, std::memory_order_relaxed);
    b.end = b.next + kBlock;
  }
  return b.next++;
}

}  // namespace epprof::core
