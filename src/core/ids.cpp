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
// Initial-exec static TLS (as core/threads.h's cache): no __tls_get_addr
// call on the hot path, and 16 bytes are small enough for a dlopen'ed
// library's share of static TLS.
__thread IdBlock t_block __attribute__((tls_model("initial-exec")));

}  // namespace

uint64_t next_correlation_id() noexcept {
  IdBlock& b = t_block;
  if (__builtin_expect(b.next == b.end, 0)) {
    b.next = g_next_block.fetch_add(kBlock, std::memory_order_relaxed);
    b.end = b.next + kBlock;
  }
  return b.next++;
}

uint64_t reserve_correlation_ids(uint64_t count) noexcept {
  if (count == 0 || count > (uint64_t(1) << 48)) return 0;
  IdBlock& b = t_block;
  if (b.end - b.next >= count) {  // from this thread's block
    const uint64_t first = b.next;
    b.next += count;
    return first;
  }
  return g_next_block.fetch_add(count, std::memory_order_relaxed);
}

}  // namespace epprof::core
