// The runtime's tensor buffer pool (src/buffer_pool.h): large buffers come
// back for reuse from a shared pool, small ones from the freeing thread's
// cache, the excess of either goes to malloc, and a model run
// again and again does not page its activations in again every run, even
// when glibc would trim every freed byte off the heap.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "buffer_pool.h"
#include "epprof/rt/observer.h"
#include "epprof/rt/session.h"
#include "random_inputs.h"

namespace {

using namespace epprof::rt;

TEST(BufferPool, ALargeBufferIsReusedAtItsSize) {
  memory::trim_buffer_pool();
  EXPECT_EQ(memory::idle_buffer_bytes(), 0u);
  const size_t big = memory::kMinPooledBytes + 64 * 7;  // a size no other test uses
  void* a = memory::acquire_buffer(big);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  const size_t idle = memory::idle_buffer_bytes();
  memory::release_buffer(a, big);
  EXPECT_EQ(memory::idle_buffer_bytes(), idle + big);
  void* other = memory::acquire_buffer(big + 64);  // another size: not this one
  EXPECT_NE(other, a);
  void* b = memory::acquire_buffer(big);
  EXPECT_EQ(b, a);
  EXPECT_EQ(memory::idle_buffer_bytes(), idle);
  memory::release_buffer(b, big);
  memory::release_buffer(other, big + 64);
}

TEST(BufferPool, TheExcessGoesBackToMalloc) {
  memory::trim_buffer_pool();
  const size_t idle = memory::idle_buffer_bytes();
  void* small = memory::acquire_buffer(memory::kMinPooledBytes - 64);
  memory::release_buffer(small, memory::kMinPooledBytes - 64);
  EXPECT_EQ(memory::idle_buffer_bytes(), idle);  // small buffers are not the shared pool's
  // More than the cap, released at once: the pool keeps at most the cap.
  const size_t chunk = size_t(32) << 20;
  std::vector<void*> held;
  for (size_t total = 0; total <= memory::kMaxIdleBytes; total += chunk) held.push_back(memory::acquire_buffer(chunk));
  for (void* p : held) memory::release_buffer(p, chunk);
  EXPECT_LE(memory::idle_buffer_bytes(), memory::kMaxIdleBytes);
  EXPECT_GE(memory::idle_buffer_bytes(), memory::kMaxIdleBytes - chunk);
  memory::trim_buffer_pool();
  EXPECT_EQ(memory::idle_buffer_bytes(), 0u);
}

TEST(BufferPool, ASmallBufferIsReusedAtItsSizeOnTheThreadThatFreedIt) {
  memory::trim_buffer_pool();
  EXPECT_EQ(memory::idle_small_bytes(), 0u);
  const size_t small = 64 * 13;
  void* a = memory::acquire_buffer(small);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  memory::release_buffer(a, small);
  EXPECT_EQ(memory::idle_small_bytes(), small);
  void* other = memory::acquire_buffer(small + 64);  // another size: not this one
  EXPECT_NE(other, a);
  void* b = memory::acquire_buffer(small);
  EXPECT_EQ(b, a);
  EXPECT_EQ(memory::idle_small_bytes(), 0u);
  // Freed on another thread, it is that thread's to reuse, not this one's.
  std::thread([&] {
    memory::release_buffer(b, small);
    EXPECT_EQ(memory::idle_small_bytes(), small);
    EXPECT_EQ(memory::acquire_buffer(small), b);
    memory::release_buffer(b, small);  // the thread's exit frees it
  }).join();
  EXPECT_EQ(memory::idle_small_bytes(), 0u);
  memory::release_buffer(other, small + 64);
  EXPECT_EQ(memory::idle_small_bytes(), small + 64);
  memory::trim_buffer_pool();
  EXPECT_EQ(memory::idle_small_bytes(), 0u);
}

// A size that is not a multiple of 64 is rounded up to one (0 to 64), on
// the way in and on the way back: the buffer is then reused for that whole
// size, which it holds, and for no larger one.
TEST(BufferPool, ASizeIsRoundedUpToWholeCacheLines) {
  memory::trim_buffer_pool();
  void* odd = memory::acquire_buffer(100);
  ASSERT_NE(odd, nullptr);
  memory::release_buffer(odd, 100);
  EXPECT_EQ(memory::idle_small_bytes(), 128u);
  void* larger = memory::acquire_buffer(129);
  EXPECT_NE(larger, odd);
  void* same = memory::acquire_buffer(128);
  EXPECT_EQ(same, odd);
  memory::release_buffer(same, 128);
  memory::release_buffer(larger, 129);
  memory::trim_buffer_pool();
  // 0 bytes is one line, counted against the thread's cap like any other.
  void* none = memory::acquire_buffer(0);
  ASSERT_NE(none, nullptr);
  memory::release_buffer(none, 0);
  EXPECT_EQ(memory::idle_small_bytes(), 64u);
  EXPECT_EQ(memory::acquire_buffer(64), none);
  memory::release_buffer(none, 64);
  memory::trim_buffer_pool();
}

TEST(BufferPool, AThreadKeepsAtMostItsCapOfSmallBuffers) {
  memory::trim_buffer_pool();
  const size_t small = memory::kMinPooledBytes - 64;
  std::vector<void*> held;
  for (size_t total = 0; total <= memory::kMaxIdleSmallBytes; total += small)
    held.push_back(memory::acquire_buffer(small));
  for (void* p : held) memory::release_buffer(p, small);
  EXPECT_LE(memory::idle_small_bytes(), memory::kMaxIdleSmallBytes);
  EXPECT_GT(memory::idle_small_bytes(), memory::kMaxIdleSmallBytes - small);
  memory::trim_buffer_pool();
  EXPECT_EQ(memory::idle_small_bytes(), 0u);
}

#if defined(__SANITIZE_ADDRESS__)
// An idle buffer is poisoned: a kernel writing to a tensor it already freed
// is caught as it would be without the cache.
TEST(BufferPoolDeathTest, TouchingAnIdleSmallBufferIsCaughtByAddressSanitizer) {
  void* p = memory::acquire_buffer(256);
  memory::release_buffer(p, 256);
  EXPECT_DEATH(static_cast<volatile char*>(p)[100] = 1, "use-after-poison");
}
#endif

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The heap layout that made the bundled CNN 3x slower under `epprof run`:
// large tensors served from the heap while glibc trims its top at the
// default threshold, so each run's activations were handed back to the
// system and faulted in again. With it forced here, a run after the first
// takes its activations (and its kernels' scratch) from the pool, so its
// page faults stay a small fraction of the pages its outputs span.
TEST(BufferPool, RepeatedRunsDoNotFaultTheirActivationsInAgain) {
  // A sanitizer's allocator replaces glibc's and has no mallopt: the layout
  // cannot be forced there.
  if (mallopt(M_MMAP_THRESHOLD, 64 << 20) != 1)  // big tensors from the heap
    GTEST_SKIP() << "this process's allocator has no mallopt (a sanitizer's?): glibc's heap layout cannot be forced";
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 128 << 10), 1);  // trimmed at the default, never raised
  Session s(std::string(EPPROF_MODELS_DIR) + "/cnn.onnx");
  const auto in = epprof::rt::testing::random_inputs(s, 1);
  // What one run's outputs span, in pages: what it would fault in again
  // if the heap gave them all back.
  struct OutputBytes final : RunObserver {
    void node_end(const NodeInfo&, const NodeIo& io) override { bytes += io.output_bytes(); }
    size_t bytes = 0;
  } outputs;
  RunOptions ro;
  ro.observer = &outputs;
  s.run(in, ro);  // fills the pool
  const double pages = double(outputs.bytes) / 4096;
  const long before = minor_faults();
  constexpr int kRuns = 20;
  for (int r = 0; r < kRuns; ++r) s.run(in);
  const double per_run = double(minor_faults() - before) / kRuns;
  std::printf("[ faults   ] %.1f per run; a run's outputs span %.0f pages\n", per_run, pages);
  EXPECT_LT(per_run, pages / 10);
  mallopt(M_MMAP_THRESHOLD, 128 << 10);  // glibc's starting values (no longer dynamic)
}

}  // namespace
