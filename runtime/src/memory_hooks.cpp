#include "memory_hooks.h"

namespace epprof::rt::memory {
namespace {

static_assert(sizeof(Listeners::l) / sizeof(Listener) == Owners::kMax, "an owner per listener");
thread_local Listeners t_listeners;

}  // namespace

void listen(const Listener& l) noexcept {
  Listeners& t = t_listeners;
  if (t.n < Owners::kMax) t.l[t.n++] = l;
}

void unlisten(epprof_profiler_t profiler) noexcept {
  Listeners& t = t_listeners;
  for (int i = 0; i < t.n; ++i)
    if (t.l[i].profiler.handle == profiler.handle) {
      for (int j = i + 1; j < t.n; ++j) t.l[j - 1] = t.l[j];
      --t.n;
      return;
    }
}

Listeners current() noexcept { return t_listeners; }

Borrow::Borrow(const Listeners& lent) noexcept {
  Listeners& t = t_listeners;
  if (lent.n == 0 && t.n == 0) return;  // no one listens: the usual case costs a load
  own_ = t;
  t = lent;
  swapped_ = true;
}

Borrow::~Borrow() {
  if (swapped_) t_listeners = own_;
}

Owners report_allocated(const void* p, size_t bytes, bool temporary) noexcept {
  Owners owners;
  const Listeners& t = t_listeners;
  for (int i = 0; i < t.n; ++i) {
    const Listener& l = t.l[i];
    epprof_status* st = epprof_memory_alloc(l.profiler, uint64_t(uintptr_t(p)), bytes, l.device,
                                            temporary ? EPPROF_MEMORY_TEMPORARY
                                                      : l.tag->load(std::memory_order_relaxed));
    if (st) {
      epprof_status_release(st);
      continue;
    }
    owners.profiler[owners.n] = l.profiler;
    owners.device[owners.n] = l.device;
    ++owners.n;
  }
  return owners;
}

void report_freed(const Owners& owners, const void* p) noexcept {
  for (int i = 0; i < owners.n; ++i)
    epprof_status_release(epprof_memory_free(owners.profiler[i], uint64_t(uintptr_t(p)), owners.device[i]));
}

}  // namespace epprof::rt::memory
