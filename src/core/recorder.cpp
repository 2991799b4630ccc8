#include "core/recorder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "base/thread.h"
#include "core/log.h"

namespace epprof::core {
namespace {

constexpr size_t kRunChunks = 256;
constexpr size_t kSpillWriteBytes = 1 << 20;

size_t entry_bytes(const Record* r) { return kSlotBytes * (1 + size_t(payload_slots(*r))); }

inline bool key_less(const IndexEntry& a, const IndexEntry& b) {
  return a.rec->ts != b.rec->ts ? a.rec->ts < b.rec->ts : a.rec->dur > b.rec->dur;
}

uint64_t count_entries(const std::vector<Chunk*>& chunks) {
  uint64_t n = 0;
  for (const Chunk* c : chunks) n += c->events;
  return n;
}

// Fills out[0, n) with the n entries of `chunks` (all of one stream, in
// order) ordered by start, then longer first, then, at equal keys, the
// later-written first (the order a stable sort of the reversed stream
// gives; for nested events with equal keys, the enclosing one first).
//
// Records are written when events end, so a stream of nested events is in
// post-order: an event comes right after its descendants, and belongs just
// before them. One insertion pass from the back moves each record before
// the maximal suffix of placed records that are not less than it (its
// descendants, for a nested stream): an already sorted stream costs one
// comparison per entry, a nested one the sum of subtree sizes. Streams that
// do not nest (epprof_event_record takes arbitrary events) can make that
// quadratic, so past a bound on moved entries this falls back to a sort.
void index_chunks(const std::vector<Chunk*>& chunks, IndexEntry* out, size_t n, uint8_t* flags) {
  const size_t budget = 8 * n + 64;
  uint8_t seen = 0;
  size_t m = 0, moved = 0;
  for (const Chunk* c : chunks) {
    const uint32_t used = c->used;
    for (uint32_t i = 0; i < used;) {
      const Record* r = &c->slots[i];
      // The chunks are cold by now; the hardware prefetcher stops at page
      // boundaries. (A prefetch past the chunk is harmless.)
      __builtin_prefetch(reinterpret_cast<const char*>(r) + 2048);
      i += 1 + payload_slots(*r);
      seen |= r->flags;
      const IndexEntry e{r};
      size_t j = m;
      if (j > 0 && !key_less(out[j - 1], e)) {
        do {
          out[j] = out[j - 1];
          --j;
        } while (j > 0 && !key_less(out[j - 1], e));
        moved += m - j;
        if (moved > budget) goto sort;
      }
      out[j] = e;
      ++m;
    }
  }
  *flags |= seen;
  return;

sort:
  // Reversed, so that a stable sort puts the later-written first at equal
  // keys, as the insertion pass does.
  m = n;
  for (const Chunk* c : chunks) {
    const uint32_t used = c->used;
    for (uint32_t i = 0; i < used;) {
      const Record* r = &c->slots[i];
      i += 1 + payload_slots(*r);
      *flags |= r->flags;
      out[--m] = IndexEntry{r};
    }
  }
  std::stable_sort(out, out + n, key_less);
}

// The index of `n` entries that finish() fills at once: memory whose pages
// are already mapped, from the slab pool (a finished recorder's slabs, an
// earlier stop's index) when it holds a piece large enough, else a fresh
// mapping populated in its one mmap call (MAP_POPULATE): no page fault per
// page (a 1M-event index is 2,000 pages). On a shadow-paging VM the first
// access to each fresh page still traps (see touch_pages), which the
// pool's pages have paid already. The index goes back to the pool.
struct IndexMapping {
  void operator()(IndexEntry* p) const;
  size_t bytes = 0;
};
using IndexArray = std::unique_ptr<IndexEntry[], IndexMapping>;
IndexArray map_index(size_t n);

class MemoryRun final : public RunCursor {
 public:
  MemoryRun(uint32_t stream, IndexArray index, size_t n) : index_(std::move(index)) {
    stream_ = stream;
    begin_ = index_.get();
    end_ = index_.get() + n;
  }
  bool refill() override {
    begin_ = end_;
    return false;
  }

 private:
  IndexArray index_;
};

// A spilled run, read back a buffer at a time; each window indexes up to
// kWindowEntries whole entries of the buffer.
class DiskRun final : public RunCursor {
 public:
  DiskRun(int fd, uint32_t stream, uint64_t offset, uint64_t bytes)
      : fd_(fd), next_offset_(offset), end_offset_(offset + bytes), buf_(new unsigned char[kBufBytes]) {
    stream_ = stream;
    records_stable_ = false;
    window_.reserve(kWindowEntries);
    refill();
  }
  bool refill() override {
    size_t pos = parsed_;
    if (!whole_entry_at(pos)) {
      // Keep the partial entry at the end of the buffer, read on.
      std::memmove(buf_.get(), buf_.get() + pos, len_ - pos);
      len_ -= pos;
      pos = 0;
      while (len_ < kBufBytes && next_offset_ < end_offset_) {
        size_t want = std::min<uint64_t>(kBufBytes - len_, end_offset_ - next_offset_);
        ssize_t n = pread(fd_, buf_.get() + len_, want, off_t(next_offset_));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {  // a short spill file ends the run; never read garbage
          next_offset_ = end_offset_;
          break;
        }
        len_ += size_t(n);
        next_offset_ += uint64_t(n);
      }
    }
    window_.clear();
    while (window_.size() < kWindowEntries && whole_entry_at(pos)) {
      const Record* r = reinterpret_cast<const Record*>(buf_.get() + pos);
      window_.push_back(IndexEntry{r});
      pos += entry_bytes(r);
    }
    parsed_ = pos;
    begin_ = window_.data();
    end_ = window_.data() + window_.size();
    return !window_.empty();
  }

 private:
  static constexpr size_t kBufBytes = 256 * 1024;
  static constexpr size_t kWindowEntries = 512;

  bool whole_entry_at(size_t pos) const {
    return len_ - pos >= kSlotBytes &&
           len_ - pos >= entry_bytes(reinterpret_cast<const Record*>(buf_.get() + pos));
  }

  int fd_;
  uint64_t next_offset_;
  uint64_t end_offset_;
  std::unique_ptr<unsigned char[]> buf_;  // 16-byte aligned by new[]
  size_t len_ = 0;     // bytes in buf_
  size_t parsed_ = 0;  // bytes of buf_ indexed so far
  std::vector<IndexEntry> window_;
};

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}


}  // namespace

Recorder::Recorder(uint64_t memory_budget_bytes, uint64_t disk_budget_bytes, std::string spill_dir)
    : budget_chunks_(std::max<uint64_t>(4, memory_budget_bytes / kChunkBytes)),
      disk_budget_(disk_budget_bytes),
      spill_dir_(std::move(spill_dir)) {}


namespace {

// Maps `bytes` of zeroed memory with its pages populated (MAP_POPULATE):
// the kernel maps them all in this one call instead of one fault per page
// on the recording thread. No transparent huge pages: on virtual machines a
// fresh 2 MiB page can take milliseconds to back (measured 5 ms here, vs
// 0.65 ms for 2 MiB of 4 KiB pages), a stall no profiler should inflict.
void* map_slab(size_t bytes) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return base == MAP_FAILED ? nullptr : base;
}

// Reads one byte of every page. On virtual machines that shadow the guest's
// page tables, the first access to a page through an address space costs a
// trap to the hypervisor (5 to 8 us a page here) even once MAP_POPULATE has
// mapped it, and an access from any thread of the process pays it for all:
// the provisioner pays it, not the recording thread. (Measured: a 3 MB
// buffer, mapped populated, was filled at 50 ns per 24-byte entry, and at
// 2.6 ns once another thread had read one byte per page.)
void touch_pages(const void* base, size_t bytes) {
  const volatile unsigned char* p = static_cast<const volatile unsigned char*>(base);
  for (size_t off = 0; off < bytes; off += 4096) (void)p[off];
}

// Slabs ready to write into, kept mapped and populated: those of finished
// recorders (the next run's profiler, a restarted session reuses them), and
// fresh ones a background thread populates ahead of a growing recorder, so
// that a long scope's recording thread does not pay for page population
// either. Bounded: past kPoolCapBytes a slab is unmapped instead.
class SlabPool {
 public:
  static constexpr size_t kPoolCapBytes = size_t(64) << 20;
  static constexpr size_t kAheadBytes = size_t(2) << 20;  // what the provisioner keeps ready

  // A ready slab, or {nullptr, 0}.
  std::pair<void*, size_t> take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (slabs_.empty()) return {nullptr, 0};
    auto slab = slabs_.back();
    slabs_.pop_back();
    bytes_ -= slab.second;
    return slab;
  }
  // The smallest ready slab of at least `bytes`, or {nullptr, 0}.
  std::pair<void*, size_t> take_at_least(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t best = slabs_.size();
    for (size_t i = 0; i < slabs_.size(); ++i)
      if (slabs_[i].second >= bytes && (best == slabs_.size() || slabs_[i].second < slabs_[best].second)) best = i;
    if (best == slabs_.size()) return {nullptr, 0};
    auto slab = slabs_[best];
    slabs_.erase(slabs_.begin() + long(best));
    bytes_ -= slab.second;
    return slab;
  }
  void give(void* base, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes_ + bytes <= kPoolCapBytes) {
        slabs_.emplace_back(base, bytes);
        bytes_ += bytes;
        return;
      }
    }
    munmap(base, bytes);
  }
  // A recorder is growing: have one fresh slab ready for its next need,
  // populated off the recording thread. Never blocks.
  void provision_ahead() {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ >= kAheadBytes || provisioning_) return;
    provisioning_ = true;
    if (!thread_started_) {
      thread_started_ = true;
      try {
        base::quiet_thread([this] { provisioner(); }).detach();
      } catch (const std::system_error&) {
        provisioning_ = false;  // no thread: slabs are mapped on demand
        return;
      }
    }
    cv_.notify_one();
  }

 private:
  void provisioner() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return provisioning_; });
      lock.unlock();
      void* base = map_slab(kAheadBytes);
      if (base) touch_pages(base, kAheadBytes);
      lock.lock();
      provisioning_ = false;
      if (base) {
        slabs_.emplace_back(base, kAheadBytes);
        bytes_ += kAheadBytes;
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<void*, size_t>> slabs_;
  size_t bytes_ = 0;
  bool provisioning_ = false;
  bool thread_started_ = false;
};

SlabPool& slab_pool() {
  static SlabPool* pool = new SlabPool();  // never destroyed: recorders may outlive static destruction
  return *pool;
}

void IndexMapping::operator()(IndexEntry* p) const { slab_pool().give(p, bytes); }

IndexArray map_index(size_t n) {
  // Whole chunks, so that a recorder can carve the piece into chunks later.
  const size_t bytes = (n * sizeof(IndexEntry) + kChunkBytes - 1) / kChunkBytes * kChunkBytes;
  auto [base, size] = slab_pool().take_at_least(bytes);
  if (!base) {
    base = map_slab(bytes);
    if (!base) throw std::bad_alloc();
    size = bytes;
  }
  return IndexArray(static_cast<IndexEntry*>(base), IndexMapping{size});
}

}  // namespace

// A fresh chunk from the current slab, taking a new slab when it is used
// up: a recording thread that moves to a new chunk writes no memset (the
// chunk's header is all it initialises) and takes no page faults; a fresh
// slab's pages are populated in its one mmap call.
// Slabs come from the pool of finished recorders first; a fresh one is 4
// chunks (256 KiB) the first time, so short scopes stay small, then 32
// (2 MiB). Never past the memory budget.
Chunk* Recorder::carve_chunk_locked() {
  if (slab_next_ == slab_end_) {
    auto [base, bytes] = slab_pool().take();
    if (!base) {
      const uint64_t room = budget_chunks_ > allocated_ ? budget_chunks_ - allocated_ : 1;
      const size_t chunks = size_t(std::min<uint64_t>(next_slab_chunks_, room));
      bytes = chunks * kChunkBytes;
      base = map_slab(bytes);
      if (!base) throw std::bad_alloc();
    }
    slabs_.push_back({base, bytes});
    // A recorder that needed one slab will likely need another.
    if (allocated_ + bytes / kChunkBytes < budget_chunks_) slab_pool().provision_ahead();
    slab_next_ = static_cast<unsigned char*>(base);
    slab_end_ = slab_next_ + bytes;
    next_slab_chunks_ = 32;
  }
  Chunk* c = new (slab_next_) Chunk;  // default-initialised: the header only
  slab_next_ += kChunkBytes;
  return c;
}

Recorder::~Recorder() {
  // Chunks are trivially destructible and live in the slabs, which go back
  // to the pool for the next recorder.
  static_assert(std::is_trivially_destructible_v<Chunk>);
  for (const Slab& slab : slabs_) slab_pool().give(slab.base, slab.bytes);
  if (spill_fd_ >= 0) close(spill_fd_);
}

ThreadStream* Recorder::add_thread(int64_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto s = std::make_unique<ThreadStream>();
  s->tid = tid;
  s->index = uint32_t(streams_.size());
  s->current = take_chunk_locked();
  s->current->stream = s->index;
  streams_.push_back(std::move(s));
  return streams_.back().get();
}

void Recorder::rollover(ThreadStream& s) {
  std::lock_guard<std::mutex> lock(mu_);
  seal(s);
  full_.push_back(s.current);
  Chunk* c = take_chunk_locked();
  c->stream = s.index;
  s.current = c;
}

Chunk* Recorder::take_chunk_locked() {
  if (!free_ && allocated_ >= budget_chunks_ && !full_.empty()) spill_locked();
  Chunk* c = free_;
  if (c) {
    free_ = c->next;
  } else {
    // Under budget, or every chunk is some thread's current one: a thread
    // always gets a chunk to write into.
    c = carve_chunk_locked();
    ++allocated_;
    stats_.peak_chunks = std::max(stats_.peak_chunks, allocated_);
  }
  c->used = 0;
  c->events = 0;
  c->next = nullptr;
  return c;
}

bool Recorder::ensure_spill_file_locked() {
  if (spill_fd_ >= 0) return true;
  if (!spill_error_.empty()) return false;
  const std::string dir = spill_dir_.empty() ? std::string(".") : spill_dir_;
#ifdef O_TMPFILE
  spill_fd_ = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (spill_fd_ < 0) {
    std::string tmpl = dir + "/.epprof-spill-XXXXXX";
    spill_fd_ = mkostemp(tmpl.data(), O_CLOEXEC);
    if (spill_fd_ >= 0) unlink(tmpl.c_str());
  }
  if (spill_fd_ < 0) {
    spill_error_ = "cannot create a spill file in '" + dir + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

void Recorder::spill_locked() {
  // Group the full chunks by stream, keeping each stream's order.
  std::vector<std::vector<Chunk*>> by_stream(streams_.size());
  for (Chunk* c : full_) by_stream[c->stream].push_back(c);
  full_.clear();

  std::vector<IndexEntry> index;
  std::vector<unsigned char> out;
  for (uint32_t s = 0; s < by_stream.size(); ++s) {
    const auto& chunks = by_stream[s];
    // Sorted runs of at most kRunChunks chunks bound the index built here.
    for (size_t first = 0; first < chunks.size(); first += kRunChunks) {
      std::vector<Chunk*> slice(chunks.begin() + long(first),
                                chunks.begin() + long(std::min(chunks.size(), first + kRunChunks)));
      spill_run_locked(s, slice, index, out);
      for (Chunk* c : slice) {
        c->next = free_;
        free_ = c;
      }
    }
  }
}

void Recorder::spill_run_locked(uint32_t stream, const std::vector<Chunk*>& chunks,
                                std::vector<IndexEntry>& index, std::vector<unsigned char>& out) {
  uint64_t bytes = 0;
  for (Chunk* c : chunks) bytes += uint64_t(c->used) * kSlotBytes;
  const uint64_t events = count_entries(chunks);
  stats_.events += events;
  if (spill_bytes_ + bytes <= disk_budget_ && ensure_spill_file_locked()) {
    if (index.size() < events) index.resize(events);
    index_chunks(chunks, index.data(), events, &record_flags_);
    // Entries are at most a chunk: a buffer of kSpillWriteBytes plus a
    // chunk never overflows before it is written.
    if (out.size() < kSpillWriteBytes + kChunkBytes) out.resize(kSpillWriteBytes + kChunkBytes);
    bool ok = true;
    size_t fill = 0;
    for (size_t i = 0; i < events && ok; ++i) {
      const Record* r = index[i].rec;
      const size_t n = entry_bytes(r);
      std::memcpy(out.data() + fill, r, n);
      fill += n;
      if (fill >= kSpillWriteBytes || i + 1 == events) {
        ok = write_all(spill_fd_, out.data(), fill);
        fill = 0;
      }
    }
    if (ok) {
      runs_.push_back(SpillRun{spill_bytes_, bytes, stream});
      spill_bytes_ += bytes;
      stats_.spilled_bytes += bytes;
      ++stats_.spill_runs;
      return;
    }
    spill_error_ = std::string("writing the spill file failed: ") + std::strerror(errno);
    // The file may hold part of this run past spill_bytes_; no run reads it,
    // and the next run overwrites it.
    (void)lseek(spill_fd_, off_t(spill_bytes_), SEEK_SET);
  }
  stats_.dropped_events += events;
  if (!warned_drop_) {
    warned_drop_ = true;
    log_warning(EPPROF_RESOURCE_EXHAUSTED,
                "epprof: dropping host events: memory budget reached and " +
                    (spill_error_.empty() ? std::string("disk budget exhausted") : spill_error_) +
                    "; the exact count is in the trace metadata");
  }
}

std::vector<std::unique_ptr<RunCursor>> Recorder::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::vector<Chunk*>> by_stream(streams_.size());
  for (Chunk* c : full_) by_stream[c->stream].push_back(c);
  full_.clear();
  for (auto& s : streams_) {
    if (s->current) {
      seal(*s);
      by_stream[s->index].push_back(s->current);
    }
    s->current = nullptr;
  }
  std::vector<std::unique_ptr<RunCursor>> runs;
  for (const SpillRun& r : runs_)
    runs.push_back(std::make_unique<DiskRun>(spill_fd_, r.stream, r.offset, r.bytes));
  for (uint32_t s = 0; s < by_stream.size(); ++s) {
    const uint64_t n = count_entries(by_stream[s]);
    stats_.events += n;
    if (n > 0) {
      IndexArray index = map_index(size_t(n));
      index_chunks(by_stream[s], index.get(), n, &record_flags_);
      runs.push_back(std::make_unique<MemoryRun>(s, std::move(index), n));
    }
    finished_.insert(finished_.end(), by_stream[s].begin(), by_stream[s].end());
  }
  return runs;
}

RecorderStats Recorder::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string Recorder::spill_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spill_error_;
}

}  // namespace epprof::core
