// Per-thread state shared by every profiler: the cached kernel thread id,
// the thread's name for trace tracks, and the cache that maps a profiler
// handle to this thread's stream in that profiler without a lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace epprof::core {

struct ThreadStream;

constexpr uint32_t kMaxProfilers = 256;

struct ThreadCache {
  int64_t tid = 0;
  struct Entry {
    uint64_t handle = 0;
    ThreadStream* stream = nullptr;
  } entries[kMaxProfilers];
};

// Only a pointer lives in static TLS (initial-exec: no __tls_get_addr on the
// hot path, and small enough for a dlopen'ed library). __thread rather than
// thread_local: a trivially initialised pointer needs no TLS init wrapper.
extern __thread ThreadCache* t_cache __attribute__((tls_model("initial-exec")));

// The last profiler this thread found in its cache, and its stream: a
// thread that records into one profiler reads this (in the same static TLS
// line as t_cache) rather than the cache's table.
struct LastStream {
  uint64_t handle;
  ThreadStream* stream;
};
extern __thread LastStream t_last __attribute__((tls_model("initial-exec")));

// Creates the calling thread's cache (freed at thread exit).
ThreadCache& thread_cache_slow();

inline ThreadCache& thread_cache() {
  ThreadCache* c = t_cache;
  return __builtin_expect(c != nullptr, 1) ? *c : thread_cache_slow();
}

void set_thread_name(int64_t tid, std::string name);
// Names of every thread named so far.
std::map<int64_t, std::string> thread_names();

}  // namespace epprof::core
