#include "core/merge.h"

namespace epprof::core {

Merger::Merger(std::vector<std::unique_ptr<RunCursor>> runs) : runs_(std::move(runs)) {
  for (size_t i = 0; i < runs_.size(); ++i)
    if (runs_[i]->peek()) heap_.push_back(i);
  for (size_t i = heap_.size() / 2; i-- > 0;) sift_down(i);
}

bool Merger::less(size_t a, size_t b) const {
  const Record* x = runs_[heap_[a]]->peek();
  const Record* y = runs_[heap_[b]]->peek();
  if (x->ts != y->ts) return x->ts < y->ts;
  if (x->dur != y->dur) return x->dur > y->dur;
  return heap_[a] < heap_[b];  // deterministic order between runs
}

void Merger::sift_down(size_t i) {
  const size_t n = heap_.size();
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && less(l, m)) m = l;
    if (r < n && less(r, m)) m = r;
    if (m == i) return;
    std::swap(heap_[i], heap_[m]);
    i = m;
  }
}

const Record* Merger::next(uint32_t* stream) {
  if (pending_) {
    pending_->advance();
    if (!pending_->peek()) {
      heap_[0] = heap_.back();
      heap_.pop_back();
    }
    if (!heap_.empty()) sift_down(0);
    pending_ = nullptr;
  }
  if (heap_.empty()) return nullptr;
  pending_ = runs_[heap_[0]].get();
  *stream = pending_->stream();
  return pending_->peek();
}

}  // namespace epprof::core
