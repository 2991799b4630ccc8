#include "session/session.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>

#include "base/thread.h"
#include "core/log.h"

namespace epprof::session {
bool Filters::accepts(const epprof_record& r) const noexcept {
  if (kinds && (r.kind >= 32 || !((kinds >> r.kind) & 1u))) return false;
  if (categories && (r.category >= 32 || !((categories >> r.category) & 1u))) return false;
  if (!counter_names.empty() && r.kind == EPPROF_RECORD_COUNTER && !core::contains_name(counter_names, r.name))
    return false;
  return accepts_names(r.op_type, r.node, r.ep, r.kernel);
}

Session::Session(SessionSettings settings, Filters filters)
    : settings_(std::move(settings)),
      filters_(std::move(filters)),
      mask_(settings_.capacity_records - 1),
      slots_(new Slot[settings_.capacity_records]) {
  for (uint64_t i = 0; i < settings_.capacity_records; ++i)
    slots_[i].seq.store(i, std::memory_order_relaxed);
  batch_.resize(settings_.capacity_records);
  if (!settings_.trace_path.empty()) trace_ = std::make_unique<SessionTrace>(settings_.trace_path);
  thread_ = base::quiet_thread([this] { delivery_loop(); });
}

Session::~Session() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_one();
  // The last reference can be dropped by the session's own callback (a
  // stats query racing destroy): the thread cannot join itself.
  if (thread_.joinable()) {
    if (on_delivery_thread())
      thread_.detach();
    else
      thread_.join();
  }
}

bool Session::try_push(const epprof_record& r) noexcept {
  uint64_t pos = tail_.load(std::memory_order_relaxed);
  for (;;) {
    Slot& s = slots_[pos & mask_];
    const uint64_t seq = s.seq.load(std::memory_order_acquire);
    const int64_t diff = int64_t(seq - pos);
    if (diff == 0) {
      if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        s.rec = r;
        s.seq.store(pos + 1, std::memory_order_release);
        break;
      }
    } else if (diff < 0) {
      return false;  // the slot still holds a record of the previous lap: full
    } else {
      pos = tail_.load(std::memory_order_relaxed);
    }
  }
  if (pos + 1 - head_.load(std::memory_order_relaxed) >= settings_.watermark_records &&
      !wake_.load(std::memory_order_relaxed) && !wake_.exchange(true, std::memory_order_acq_rel))
    wake_delivery();
  return true;
}

void Session::wake_delivery() noexcept {
  { std::lock_guard<std::mutex> lock(mu_); }  // pairs with the predicate check
  cv_.notify_one();
}

void Session::push(const epprof_record& r) noexcept {
  if (__builtin_expect(try_push(r), 1)) return;
  // Full. DISCARD drops; so does a LOSSLESS session fed from its own
  // callback, which would otherwise wait for itself.
  if (settings_.policy == EPPROF_BUFFER_DISCARD || on_delivery_thread()) {
    dropped_pending_.fetch_add(1, std::memory_order_relaxed);
    dropped_total_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  producer_waits_.fetch_add(1, std::memory_order_relaxed);
  for (int spin = 0;; ++spin) {
    wake_.store(true, std::memory_order_release);
    wake_delivery();
    if (spin < 8) {
      std::this_thread::yield();
    } else {
      std::unique_lock<std::mutex> lock(mu_);
      space_waiters_.fetch_add(1, std::memory_order_relaxed);
      space_cv_.wait_for(lock, std::chrono::milliseconds(1));
      space_waiters_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (try_push(r)) return;
  }
}

void Session::offer(const epprof_record* records, size_t count) noexcept {
  const bool ranged = filters_.dispatch_skip != 0 || filters_.dispatch_count != 0;
  uint64_t dispatch_id = 0;
  bool dispatch_in = true;
  uint64_t rejected = 0;
  for (size_t i = 0; i < count; ++i) {
    const epprof_record& r = records[i];
    if (!filters_.accepts(r)) {
      ++rejected;
      continue;
    }
    if (ranged) {
      bool keep = true;
      if (r.kind == EPPROF_RECORD_HOST_EVENT && r.category == EPPROF_CATEGORY_NODE &&
          r.node_index != EPPROF_RECORD_NO_NODE) {
        dispatch_in = filters_.in_range(dispatch_ordinal_.fetch_add(1, std::memory_order_relaxed));
        dispatch_id = r.correlation_id;
        keep = dispatch_in;
      } else if (dispatch_id != 0 && r.correlation_id == dispatch_id) {
        keep = dispatch_in;  // the rest of that dispatch's batch
      }
      if (!keep) {
        ++rejected;
        continue;
      }
    }
    push(r);
  }
  if (rejected) filtered_.fetch_add(rejected, std::memory_order_relaxed);
}

void Session::offer_counters(const epprof_record* records, size_t count) noexcept {
  uint64_t rejected = 0;
  for (size_t i = 0; i < count; ++i) {
    if (filters_.accepts(records[i]))
      push(records[i]);
    else
      ++rejected;
  }
  if (rejected) filtered_.fetch_add(rejected, std::memory_order_relaxed);
}

bool Session::admits_dispatch(const epprof_dispatch_info& info) noexcept {
  // Kind and category filters speak of records, not dispatches: a session
  // that keeps only COUNTER records still counts dispatches.
  if (!filters_.accepts_names(info.op_type_id, info.node_name_id, info.ep_name_id, info.kernel_name_id)) return false;
  if (filters_.dispatch_skip == 0 && filters_.dispatch_count == 0) return true;
  return filters_.in_range(query_ordinal_.fetch_add(1, std::memory_order_relaxed));
}

void Session::delivery_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      return wake_.load(std::memory_order_acquire) || flush_requested_ != flush_done_ || quit_;
    });
    const uint64_t target = flush_requested_;
    const bool quit = quit_;
    lock.unlock();
    wake_.store(false, std::memory_order_release);
    drain(target != flush_done_ || quit);
    lock.lock();
    if (target != flush_done_) {
      flush_done_ = target;
      done_cv_.notify_all();
    }
    if (quit) break;
  }
}

void Session::drain(bool all) {
  uint64_t head = head_.load(std::memory_order_relaxed);
  const uint64_t target = all ? tail_.load(std::memory_order_acquire) : 0;
  for (;;) {
    size_t n = 0;
    while (n < batch_.size()) {
      Slot& s = slots_[head & mask_];
      if (s.seq.load(std::memory_order_acquire) != head + 1) {
        if (all && head < target) {  // reserved; its producer is still writing it
          std::this_thread::yield();
          continue;
        }
        break;
      }
      batch_[n++] = s.rec;
      s.seq.store(head + mask_ + 1, std::memory_order_release);
      ++head;
    }
    head_.store(head, std::memory_order_release);
    if (space_waiters_.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(mu_);
      space_cv_.notify_all();
    }
    const uint64_t dropped = dropped_pending_.exchange(0, std::memory_order_acq_rel);
    if (n || dropped) deliver(batch_.data(), n, dropped);
    if (n < batch_.size() && (!all || head >= target)) break;
  }
}

void read_records(const void* records, size_t stride, size_t n, std::vector<epprof_record>* out) {
  out->assign(n, epprof_record{});
  const size_t k = std::min(stride, sizeof(epprof_record));
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(&(*out)[i], static_cast<const unsigned char*>(records) + i * stride, k);
    (*out)[i].size = uint32_t(sizeof(epprof_record));
  }
}

const epprof_record* in_stride(const epprof_record* records, size_t n, size_t stride,
                               std::vector<unsigned char>* buf) {
  if (stride == sizeof(epprof_record)) return records;
  buf->assign(n * stride, 0);
  const size_t k = std::min(stride, sizeof(epprof_record));
  for (size_t i = 0; i < n; ++i) {
    unsigned char* p = buf->data() + i * stride;
    std::memcpy(p, &records[i], k);
    const uint32_t size = uint32_t(k);
    std::memcpy(p + offsetof(epprof_record, size), &size, sizeof size);
  }
  return reinterpret_cast<const epprof_record*>(buf->data());
}

void Session::deliver(const epprof_record* records, size_t count, uint64_t dropped) {
  if (trace_ && count) trace_->add(records, count);
  delivered_.fetch_add(count, std::memory_order_relaxed);
  if (!settings_.callback) return;
  callback_calls_.fetch_add(1, std::memory_order_relaxed);
  try {
    records = in_stride(records, count, settings_.record_size, &strided_);
  } catch (const std::bad_alloc&) {
    count_callback_error("record callback", "no memory to give the records the tool's record_size");
    return;
  }
  try {
    epprof_session_t self{handle()};
    if (epprof_status* st = settings_.callback(settings_.callback_user_data, self, records, count, dropped)) {
      count_callback_error("record callback", std::string(epprof_status_code_name(epprof_status_get_code(st))) +
                                                  ": " + epprof_status_get_message(st));
      epprof_status_release(st);
    }
  } catch (const std::exception& e) {
    count_callback_error("record callback", std::string("threw: ") + e.what());
  } catch (...) {
    count_callback_error("record callback", "threw a non-standard exception");
  }
}

void Session::count_callback_error(const char* what, const std::string& message) noexcept {
  callback_errors_.fetch_add(1, std::memory_order_relaxed);
  if (warned_.exchange(true)) return;
  try {
    core::log_warning(EPPROF_PLUGIN_ERROR, "epprof session " + std::to_string(handle()) + ": the " + what +
                                               " failed: " + message +
                                               " (further failures are counted in callback_errors)");
  } catch (...) {
  }
}

void Session::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (quit_) return;
  const uint64_t ticket = ++flush_requested_;
  cv_.notify_one();
  done_cv_.wait(lock, [&] { return flush_done_ >= ticket || quit_; });
}

std::string Session::write_trace() {
  if (!trace_) return {};
  return trace_->write();
}

void Session::stats(epprof_session_stats& out) const {
  const uint64_t delivered = delivered_.load(std::memory_order_relaxed);
  out.records_delivered = delivered;
  out.records_dropped = dropped_total_.load(std::memory_order_relaxed);
  out.records_filtered = filtered_.load(std::memory_order_relaxed);
  out.bytes_delivered = delivered * settings_.record_size;
  const uint64_t tail = tail_.load(std::memory_order_acquire), head = head_.load(std::memory_order_acquire);
  out.records_buffered = tail > head ? tail - head : 0;
  out.callback_calls = callback_calls_.load(std::memory_order_relaxed);
  out.callback_errors = callback_errors_.load(std::memory_order_relaxed);
  out.producer_waits = producer_waits_.load(std::memory_order_relaxed);
  out.dispatches_counted = dispatches_counted_.load(std::memory_order_relaxed);
  out.counter_records = counter_records_.load(std::memory_order_relaxed);
}

}  // namespace epprof::session
