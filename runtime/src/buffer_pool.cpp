#include "buffer_pool.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace epprof::rt::memory {
namespace {

struct Pool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> idle;  // by size
  size_t idle_bytes = 0;
};

// Never destroyed: buffers may be released by static destructors that run
// after this file's would have.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void* acquire_buffer(size_t bytes) noexcept {
  if (bytes >= kMinPooledBytes) {
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    auto it = pl.idle.find(bytes);
    if (it != pl.idle.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      pl.idle_bytes -= bytes;
      return p;
    }
  }
  return std::aligned_alloc(64, bytes);
}

void release_buffer(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes >= kMinPooledBytes) {
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    if (pl.idle_bytes + bytes <= kMaxIdleBytes) {
      try {
        pl.idle[bytes].push_back(p);
        pl.idle_bytes += bytes;
        return;
      } catch (const std::bad_alloc&) {
        // no room to remember it: give it back to the system below
      }
    }
  }
  std::free(p);
}

size_t idle_buffer_bytes() noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  return pl.idle_bytes;
}

}  // namespace epprof::rt::memory
