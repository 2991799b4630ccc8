// K-way merge of sorted runs (per-thread streams, spilled runs) into one
// sequence ordered by start time; at equal starts the longer event first,
// so parents precede their children.
#pragma once

#include <memory>
#include <vector>

#include "core/recorder.h"

namespace epprof::core {

class Merger {
 public:
  explicit Merger(std::vector<std::unique_ptr<RunCursor>> runs);

  // The next entry and its stream, or nullptr when done. The record stays
  // valid until the following call.
  const Record* next(uint32_t* stream);

 private:
  bool less(size_t a, size_t b) const;
  void sift_down(size_t i);

  std::vector<std::unique_ptr<RunCursor>> runs_;
  std::vector<size_t> heap_;  // indices into runs_
  RunCursor* pending_ = nullptr;  // advanced on the next call
};

}  // namespace epprof::core
