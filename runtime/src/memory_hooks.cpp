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

namespace {

Owners report(uint64_t id, size_t bytes, bool temporary, bool chunk) noexcept {
  Owners owners;
  const Listeners& t = t_listeners;
  for (int i = 0; i < t.n; ++i) {
    const Listener& l = t.l[i];
    const epprof_memory_tag tag = chunk       ? EPPROF_MEMORY_ARENA_CHUNK
                                  : temporary ? EPPROF_MEMORY_TEMPORARY
                                              : l.tag->load(std::memory_order_relaxed);
    epprof_status* st = epprof_memory_alloc(l.profiler, id, bytes, l.device, tag);
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

void report_free(const Owners& owners, uint64_t id) noexcept {
  for (int i = 0; i < owners.n; ++i)
    epprof_status_release(epprof_memory_free(owners.profiler[i], id, owners.device[i]));
}

// Buffers are 64-byte aligned: a chunk's id is its address with the low
// bit set, apart from the id of the tensor that starts at that address.
uint64_t chunk_id(const void* p) { return uint64_t(uintptr_t(p)) | 1; }

}  // namespace

Owners report_allocated(const void* p, size_t bytes, bool temporary) noexcept {
  return report(uint64_t(uintptr_t(p)), bytes, temporary, false);
}

Owners report_arena_chunk(const void* p, size_t bytes) noexcept { return report(chunk_id(p), bytes, false, true); }

void report_arena_chunk_freed(const Owners& owners, const void* p) noexcept { report_free(owners, chunk_id(p)); }

bool report_arena_chunk_to(const Listener& l, const void* p, size_t bytes, Owners* owners) noexcept {
  if (owners->n == Owners::kMax) return false;
  epprof_status* st = epprof_memory_alloc(l.profiler, chunk_id(p), bytes, l.device, EPPROF_MEMORY_ARENA_CHUNK);
  if (st) {
    epprof_status_release(st);
    return false;
  }
  owners->profiler[owners->n] = l.profiler;
  owners->device[owners->n] = l.device;
  ++owners->n;
  return true;
}

void report_freed(const Owners& owners, const void* p) noexcept { report_free(owners, uint64_t(uintptr_t(p))); }

}  // namespace epprof::rt::memory
