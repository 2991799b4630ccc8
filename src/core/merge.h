// K-way merge of sorted runs (per-thread streams, spilled runs) into one
// sequence ordered by start time; at equal starts the longer event first,
// so parents precede their children.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/recorder.h"

namespace epprof::core {

class Merger {
 public:
  explicit Merger(std::vector<std::unique_ptr<RunCursor>> runs);

  // The next entry and its stream, or nullptr when done. The record stays
  // valid until the following call; if *stable is set (non-null), for as
  // long as the recorder lives (it is in memory, not in a spilled run's
  // read buffer).
  const Record* next(uint32_t* stream, bool* stable = nullptr);

 private:
  // A leaf's head as its sort key: (ts, ~dur, rank), where rank is the leaf
  // index (a deterministic order between runs), with kDoneBit set once the
  // run is exhausted, so that it sorts after every real entry.
  struct Key {
    uint64_t ts;
    uint64_t inv_dur;
    uint32_t rank;
  };
  struct Leaf {
    const IndexEntry* cur;
    const IndexEntry* end;
    RunCursor* run;
    uint32_t stream;
  };
  static constexpr uint32_t kDoneBit = 0x80000000u;

  Key head(uint32_t leaf) const;
  // Whether leaf a's head comes before leaf b's; without branches, since
  // which stream wins is as good as random.
  bool before(uint32_t a, uint32_t b) const;
  void advance_winner();

  std::vector<std::unique_ptr<RunCursor>> runs_;
  std::vector<Leaf> leaves_;
  std::vector<Key> keys_;  // per leaf, padded to a power of two
  // Tournament (loser) tree of leaf indices: tree_[0] is the overall
  // winner, tree_[1..size) the loser of each match.
  std::vector<uint32_t> tree_;
  bool pending_ = false;  // the winner is advanced on the next call
};

}  // namespace epprof::core
