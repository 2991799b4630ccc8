// Tensor allocations, for memory profiling: Tensor's constructor and its
// buffer's deleter report here, and the profiling observers that track
// memory (ProfilingOptions::memory) listen. With no listener a report is
// one relaxed load.
#pragma once

#include <cstddef>

namespace epprof::rt::memory {

class Listener {
 public:
  virtual ~Listener() = default;
  // Called on the allocating (freeing) thread, possibly on many at once.
  virtual void allocated(const void* p, size_t bytes) noexcept = 0;
  virtual void freed(const void* p) noexcept = 0;
};

// At most 8 at once (more are not heard, and add returns false). remove
// returns once no call into `l` is in flight.
bool add_listener(Listener* l);
void remove_listener(Listener* l);

void report_allocated(const void* p, size_t bytes) noexcept;
void report_freed(const void* p) noexcept;

}  // namespace epprof::rt::memory
