#include "core/merge.h"

#include <utility>

namespace epprof::core {

Merger::Merger(std::vector<std::unique_ptr<RunCursor>> runs) : runs_(std::move(runs)) {
  leaves_.reserve(runs_.size());
  for (size_t i = 0; i < runs_.size(); ++i) {
    RunCursor* r = runs_[i].get();
    leaves_.push_back(Leaf{r->begin(), r->end(), r, r->stream()});
  }
  size_t p = 1;
  while (p < leaves_.size()) p *= 2;
  keys_.resize(p);
  for (uint32_t i = 0; i < p; ++i) keys_[i] = head(i);
  // Winners of each match, bottom-up; the losers stay in tree_.
  std::vector<uint32_t> win(2 * p);
  for (uint32_t i = 0; i < p; ++i) win[p + i] = i;
  tree_.resize(p);
  for (size_t t = p; t-- > 1;) {
    const uint32_t a = win[2 * t], b = win[2 * t + 1];
    const bool a_wins = before(a, b);
    tree_[t] = a_wins ? b : a;
    win[t] = a_wins ? a : b;
  }
  tree_[0] = win[1];
}

Merger::Key Merger::head(uint32_t leaf) const {
  if (leaf < leaves_.size()) {
    const Leaf& l = leaves_[leaf];
    if (l.cur != l.end) return Key{l.cur->rec->ts, ~l.cur->rec->dur, leaf};
  }
  return Key{UINT64_MAX, UINT64_MAX, leaf | kDoneBit};
}

inline bool Merger::before(uint32_t a, uint32_t b) const {
  const Key& x = keys_[a];
  const Key& y = keys_[b];
  __extension__ using u128 = unsigned __int128;
  const u128 kx = u128(x.ts) << 64 | x.inv_dur, ky = u128(y.ts) << 64 | y.inv_dur;
  return (kx < ky) | ((kx == ky) & (x.rank < y.rank));
}

void Merger::advance_winner() {
  const uint32_t w = tree_[0];
  Leaf& l = leaves_[w];
  if (++l.cur == l.end && l.run->refill()) {
    l.cur = l.run->begin();
    l.end = l.run->end();
  }
  // The records are cold by now and, in start order, not quite in address
  // order, which the hardware prefetcher does not follow: fetch ahead.
  constexpr ptrdiff_t kAhead = 16;
  if (l.end - l.cur > kAhead) __builtin_prefetch(l.cur[kAhead].rec);
  keys_[w] = head(w);
  // Replay the winner's path to the root.
  uint32_t x = w;
  for (size_t t = (tree_.size() + w) >> 1; t > 0; t >>= 1) {
    const uint32_t o = tree_[t];
    const bool o_first = before(o, x);
    tree_[t] = o_first ? x : o;
    x = o_first ? o : x;
  }
  tree_[0] = x;
}

const Record* Merger::next(uint32_t* stream, bool* stable) {
  if (pending_) {
    advance_winner();
    pending_ = false;
  }
  const uint32_t w = tree_[0];
  if (keys_[w].rank & kDoneBit) return nullptr;
  pending_ = true;
  const Leaf& l = leaves_[w];
  *stream = l.stream;
  if (stable) *stable = l.run->records_stable();
  return l.cur->rec;
}

}  // namespace epprof::core
