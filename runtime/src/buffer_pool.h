// Tensor buffers, kept for reuse. An inference runs the same graph again
// and again, so it frees and allocates the same sizes every run; without a
// pool, glibc may hand a freed buffer back to the system (trimming the heap
// top) and the next run's kernels page-fault it in again: on the bundled
// CNN that cost more than the kernels did, and only in some heap layouts,
// so a profile's times depended on what else the process had allocated.
// ONNX Runtime avoids it with its arena; this is the runtime's equivalent,
// kept simple: buffers of kMinPooledBytes or more go, when freed, to a free
// list of their exact size, until the idle ones total kMaxIdleBytes; an
// allocation of that size takes one back. Smaller buffers go to a free list
// of their size on the thread that frees them, until that thread's idle
// ones total kMaxIdleSmallBytes: glibc's malloc has no thread cache for
// 64-byte-aligned blocks, so each one took its arena's lock and split and
// merged chunks, a cost that varied with the heap's layout (on the Silero
// VAD, about a tenth of a run's time).
//
// Memory profiling sees both levels, as in ONNX Runtime's profiles: a
// buffer the pool takes from the system is an arena chunk (held), reported
// to the profilers listening on the allocating thread and freed to them
// when the pool gives it back; each tensor or scratch buffer carved from it
// is an allocation in use. A profiler that starts listening hears the
// chunks the pool already holds (report_pool_chunks), so a warm pool shows
// in its profile. Thread-safe; a buffer may be released on any thread.
#pragma once

#include <cstddef>

#include "epprof/profiler.h"

namespace epprof::rt::memory {

constexpr size_t kMinPooledBytes = size_t(64) << 10;
constexpr size_t kMaxIdleBytes = size_t(256) << 20;
constexpr size_t kMaxIdleSmallBytes = size_t(4) << 20;  // per thread

// `bytes` rounded up to a multiple of 64 (64 for 0), 64-byte aligned,
// contents unspecified; null when the system has no memory.
void* acquire_buffer(size_t bytes) noexcept;
// Gives back a buffer acquire_buffer returned for the same `bytes`.
void release_buffer(void* p, size_t bytes) noexcept;

struct Listener;
// Reports every chunk the pool holds now to `l` as an arena chunk
// allocated now, and its release later.
void report_pool_chunks(const Listener& l) noexcept;
// Forgets a profiler that stops listening, so the chunks' room for
// listeners (Owners::kMax) goes to the next ones.
void forget_pool_listener(epprof_profiler_t profiler) noexcept;

// Gives every idle large buffer, and the calling thread's idle small ones,
// back to the system (tests start from an empty pool with it; a host may
// call it to return memory between workloads). Other threads' small
// buffers go back when those threads exit.
void trim_buffer_pool() noexcept;

// Idle bytes the pool holds now in large buffers (for tests).
size_t idle_buffer_bytes() noexcept;
// Idle bytes the calling thread holds in small buffers (for tests).
size_t idle_small_bytes() noexcept;

}  // namespace epprof::rt::memory
