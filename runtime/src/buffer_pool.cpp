#include "buffer_pool.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "memory_hooks.h"

namespace epprof::rt::memory {
namespace {

// A buffer taken from the system, idle or in use, and the profilers that
// heard of it (for when it goes back).
struct Chunk {
  size_t bytes;
  Owners heard;
};

struct Pool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> idle;  // by size
  size_t idle_bytes = 0;
  std::unordered_map<const void*, Chunk> chunks;  // every pooled-size buffer not given back
};

// Never destroyed: buffers may be released by static destructors that run
// after this file's would have.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// Forgets the chunk at `p` (given back to the system), under the pool's
// lock: the profilers that heard of it, to tell them it went.
Owners forget_chunk_locked(Pool& pl, const void* p) {
  Owners heard;
  auto it = pl.chunks.find(p);
  if (it != pl.chunks.end()) {
    heard = it->second.heard;
    pl.chunks.erase(it);
  }
  return heard;
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
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    try {
      pl.chunks.emplace(p, Chunk{bytes, owners});
    } catch (const std::bad_alloc&) {
      report_arena_chunk_freed(owners, p);  // cannot remember it: the profile lets it go now
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
      heard = forget_chunk_locked(pl, p);
    }
    report_arena_chunk_freed(heard, p);
  }
  std::free(p);
}

void report_pool_chunks(const Listener& l) noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  for (auto& [p, chunk] : pl.chunks) report_arena_chunk_to(l, p, chunk.bytes, &chunk.heard);
}

void forget_pool_listener(epprof_profiler_t profiler) noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  for (auto& [p, chunk] : pl.chunks) {
    Owners& o = chunk.heard;
    int kept = 0;
    for (int i = 0; i < o.n; ++i)
      if (o.profiler[i].handle != profiler.handle) {
        o.profiler[kept] = o.profiler[i];
        o.device[kept] = o.device[i];
        ++kept;
      }
    o.n = kept;
  }
}

void trim_buffer_pool() noexcept {
  std::vector<std::pair<void*, Owners>> freed;
  {
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    for (auto& [bytes, list] : pl.idle)
      for (void* p : list) {
        const Owners heard = forget_chunk_locked(pl, p);
        try {
          freed.emplace_back(p, heard);
        } catch (const std::bad_alloc&) {
          std::free(p);  // its profilers keep it as held: nothing is lost but the curve's last step
        }
      }
    pl.idle.clear();
    pl.idle_bytes = 0;
  }
  for (const auto& [p, heard] : freed) {
    report_arena_chunk_freed(heard, p);
    std::free(p);
  }
}

size_t idle_buffer_bytes() noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  return pl.idle_bytes;
}

}  // namespace epprof::rt::memory
