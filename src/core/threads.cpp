#include "core/threads.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <mutex>

namespace epprof::core {
namespace {

std::mutex g_names_mu;
std::map<int64_t, std::string>& names() {
  static std::map<int64_t, std::string> m;
  return m;
}

// Frees the cache when the thread exits.
struct CacheOwner {
  std::unique_ptr<ThreadCache> cache;
  ~CacheOwner() { t_cache = nullptr; }
};
thread_local CacheOwner t_owner;

}  // namespace

__thread ThreadCache* t_cache __attribute__((tls_model("initial-exec"))) = nullptr;
__thread LastStream t_last __attribute__((tls_model("initial-exec"))) = {0, nullptr};

ThreadCache& thread_cache_slow() {
  t_owner.cache = std::make_unique<ThreadCache>();
  t_owner.cache->tid = int64_t(syscall(SYS_gettid));
  t_cache = t_owner.cache.get();
  return *t_cache;
}

void set_thread_name(int64_t tid, std::string name) {
  std::lock_guard<std::mutex> lock(g_names_mu);
  names()[tid] = std::move(name);
}

std::map<int64_t, std::string> thread_names() {
  std::lock_guard<std::mutex> lock(g_names_mu);
  return names();
}

}  // namespace epprof::core
