#include "buffer_pool.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "memory_hooks.h"

namespace epprof::rt::memory {
namespace {

struct Pool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> idle;  // by size
  size_t idle_bytes = 0;
  // The profilers that heard a chunk taken from the system, for when it
  // goes back (only chunks someone heard).
  std::unordered_map<const void*, Owners> heard;
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
  void* p = std::aligned_alloc(64, bytes);
  if (p && bytes >= kMinPooledBytes) {
    const Owners owners = report_arena_chunk(p, bytes);
    if (owners.n) {
      Pool& pl = pool();
      std::lock_guard<std::mutex> lock(pl.mu);
      try {
        pl.heard.emplace(p, owners);
      } catch (const std::bad_alloc&) {
        report_arena_chunk_freed(owners, p);  // cannot remember it: the profile lets it go now
      }
    }
  }
  return p;
}

void release_buffer(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes >= kMinPooledBytes) {
    Owners heard;
    {
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
      auto it = pl.heard.find(p);
      if (it != pl.heard.end()) {
        heard = it->second;
        pl.heard.erase(it);
      }
    }
    report_arena_chunk_freed(heard, p);
  }
  std::free(p);
}

size_t idle_buffer_bytes() noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  return pl.idle_bytes;
}

}  // namespace epprof::rt::memory
