#include "core/recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/log.h"

namespace epprof::core {
struct IndexEntry {
  uint64_t ts;
  uint64_t inv_dur;  // ~dur, so that at equal starts the longer (outer) event comes first
  const Record* rec;

  bool operator<(const IndexEntry& b) const {
    return ts != b.ts ? ts < b.ts : inv_dur < b.inv_dur;
  }
};

namespace {

constexpr size_t kRunChunks = 256;
constexpr size_t kSpillWriteBytes = 1 << 20;

size_t entry_bytes(const Record* r) { return kSlotBytes * (1 + size_t(r->arg_slots)); }

// Appends the entries of `chunks` (all of one stream, in order) to `index`.
void index_chunks(const std::vector<Chunk*>& chunks, std::vector<IndexEntry>& index) {
  for (const Chunk* c : chunks) {
    for (uint32_t i = 0; i < c->used;) {
      const Record* r = &c->slots[i];
      index.push_back(IndexEntry{r->ts, ~r->dur, r});
      i += 1 + r->arg_slots;
    }
  }
  // Leaf-only streams are already in order; nested events are not (a parent
  // is written when it ends, after its children).
  if (!std::is_sorted(index.begin(), index.end())) std::sort(index.begin(), index.end());
}

class MemoryRun final : public RunCursor {
 public:
  MemoryRun(uint32_t stream, std::vector<IndexEntry> index) : index_(std::move(index)) {
    stream_ = stream;
    current_ = index_.empty() ? nullptr : index_[0].rec;
  }
  void advance() override {
    ++pos_;
    current_ = pos_ < index_.size() ? index_[pos_].rec : nullptr;
  }

 private:
  std::vector<IndexEntry> index_;
  size_t pos_ = 0;
};

class DiskRun final : public RunCursor {
 public:
  DiskRun(int fd, uint32_t stream, uint64_t offset, uint64_t bytes)
      : fd_(fd), next_offset_(offset), end_(offset + bytes), buf_(new unsigned char[kBufBytes]) {
    stream_ = stream;
    load();
  }
  void advance() override {
    pos_ += entry_bytes(current_);
    load();
  }

 private:
  static constexpr size_t kBufBytes = 256 * 1024;

  // Makes current_ point at a whole entry in the buffer, refilling as needed.
  void load() {
    size_t avail = len_ - pos_;
    if (avail >= kSlotBytes &&
        avail >= entry_bytes(reinterpret_cast<const Record*>(buf_.get() + pos_))) {
      current_ = reinterpret_cast<const Record*>(buf_.get() + pos_);
      return;
    }
    std::memmove(buf_.get(), buf_.get() + pos_, avail);
    pos_ = 0;
    len_ = avail;
    while (len_ < kBufBytes && next_offset_ < end_) {
      size_t want = std::min<uint64_t>(kBufBytes - len_, end_ - next_offset_);
      ssize_t n = pread(fd_, buf_.get() + len_, want, off_t(next_offset_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // a short spill file ends the run; never read garbage
      len_ += size_t(n);
      next_offset_ += uint64_t(n);
    }
    if (len_ >= kSlotBytes && len_ >= entry_bytes(reinterpret_cast<const Record*>(buf_.get())))
      current_ = reinterpret_cast<const Record*>(buf_.get());
    else
      current_ = nullptr;
  }

  int fd_;
  uint64_t next_offset_;
  uint64_t end_;
  std::unique_ptr<unsigned char[]> buf_;  // 32-byte aligned by new[] of this size
  size_t pos_ = 0;
  size_t len_ = 0;
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

Chunk* new_chunk() {
  // Value-initialisation zeroes the chunk, which also prefaults its pages
  // so the first events written into it take no page faults.
  return new Chunk();
}

}  // namespace

Recorder::Recorder(uint64_t memory_budget_bytes, uint64_t disk_budget_bytes, std::string spill_dir)
    : budget_chunks_(std::max<uint64_t>(4, memory_budget_bytes / kChunkBytes)),
      disk_budget_(disk_budget_bytes),
      spill_dir_(std::move(spill_dir)) {}

Recorder::~Recorder() {
  for (auto& s : streams_) delete s->current;
  for (Chunk* c : full_) delete c;
  while (free_) {
    Chunk* next = free_->next;
    delete free_;
    free_ = next;
  }
  for (Chunk* c : finished_) delete c;
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

Chunk* Recorder::rollover(ThreadStream& s) {
  std::lock_guard<std::mutex> lock(mu_);
  full_.push_back(s.current);
  Chunk* c = take_chunk_locked();
  c->stream = s.index;
  s.current = c;
  return c;
}

Chunk* Recorder::take_chunk_locked() {
  if (!free_ && allocated_ >= budget_chunks_ && !full_.empty()) spill_locked();
  Chunk* c = free_;
  if (c) {
    free_ = c->next;
  } else {
    // Under budget, or every chunk is some thread's current one: a thread
    // always gets a chunk to write into.
    c = new_chunk();
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
  uint64_t events = 0, bytes = 0;
  for (Chunk* c : chunks) {
    events += c->events;
    bytes += uint64_t(c->used) * kSlotBytes;
  }
  stats_.events += events;
  if (spill_bytes_ + bytes <= disk_budget_ && ensure_spill_file_locked()) {
    index.clear();
    index_chunks(chunks, index);
    out.clear();
    bool ok = true;
    for (size_t i = 0; i < index.size() && ok; ++i) {
      auto* p = reinterpret_cast<const unsigned char*>(index[i].rec);
      out.insert(out.end(), p, p + entry_bytes(index[i].rec));
      if (out.size() >= kSpillWriteBytes || i + 1 == index.size()) {
        ok = write_all(spill_fd_, out.data(), out.size());
        out.clear();
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
    if (s->current) by_stream[s->index].push_back(s->current);
    s->current = nullptr;
  }
  std::vector<std::unique_ptr<RunCursor>> runs;
  for (const SpillRun& r : runs_)
    runs.push_back(std::make_unique<DiskRun>(spill_fd_, r.stream, r.offset, r.bytes));
  for (uint32_t s = 0; s < by_stream.size(); ++s) {
    std::vector<IndexEntry> index;
    for (Chunk* c : by_stream[s]) stats_.events += c->events;
    index_chunks(by_stream[s], index);
    finished_.insert(finished_.end(), by_stream[s].begin(), by_stream[s].end());
    if (!index.empty()) runs.push_back(std::make_unique<MemoryRun>(s, std::move(index)));
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
