#include "core/merge.h"

#include <utility>

namespace epprof::core {
namespace {

template <class N>
inline bool node_less(const N& a, const N& b) {
  if (a.ts != b.ts) return a.ts < b.ts;
  if (a.inv_dur != b.inv_dur) return a.inv_dur < b.inv_dur;
  return a.rank < b.rank;
}

}  // namespace

Merger::Merger(std::vector<std::unique_ptr<RunCursor>> runs) : runs_(std::move(runs)) {
  leaves_.reserve(runs_.size());
  for (size_t i = 0; i < runs_.size(); ++i) {
    RunCursor* r = runs_[i].get();
    leaves_.push_back(Leaf{r->begin(), r->end(), r, r->stream()});
  }
  size_t p = 1;
  while (p < leaves_.size()) p *= 2;
  // Winners of each match, bottom-up; the losers stay in tree_.
  std::vector<Node> win(2 * p);
  for (size_t i = 0; i < p; ++i) win[p + i] = head(uint32_t(i));
  tree_.resize(p);
  for (size_t t = p; t-- > 1;) {
    const Node& a = win[2 * t];
    const Node& b = win[2 * t + 1];
    const bool a_wins = node_less(a, b);
    tree_[t] = a_wins ? b : a;
    win[t] = a_wins ? a : b;
  }
  tree_[0] = win[1];
}

Merger::Node Merger::head(uint32_t leaf) const {
  if (leaf < leaves_.size()) {
    const Leaf& l = leaves_[leaf];
    if (l.cur != l.end) return Node{l.cur->rec->ts, ~l.cur->rec->dur, leaf, leaf};
  }
  return Node{UINT64_MAX, UINT64_MAX, kDone, leaf};
}

void Merger::advance_winner() {
  const uint32_t w = tree_[0].leaf;
  Leaf& l = leaves_[w];
  if (++l.cur == l.end && l.run->refill()) {
    l.cur = l.run->begin();
    l.end = l.run->end();
  }
  // Replay the winner's path to the root, with the new head's key read once
  // into its node.
  Node x = head(w);
  const size_t p = tree_.size();
  for (size_t t = (p + w) >> 1; t > 0; t >>= 1) {
    if (node_less(tree_[t], x)) std::swap(tree_[t], x);
  }
  tree_[0] = x;
}

const Record* Merger::next(uint32_t* stream, bool* stable) {
  if (pending_) {
    advance_winner();
    pending_ = false;
  }
  const Node& top = tree_[0];
  if (top.rank == kDone) return nullptr;
  pending_ = true;
  const Leaf& l = leaves_[top.leaf];
  *stream = l.stream;
  if (stable) *stable = l.run->records_stable();
  return l.cur->rec;
}

}  // namespace epprof::core
