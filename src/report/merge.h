// `epprof merge`: traces of several processes in one timeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace epprof::report {

struct MergeInput {
  std::string path;
  int64_t t0_epoch_ns = 0;     // earliest T0 of its processes
  int64_t offset_ns = 0;       // added to its timestamps
  std::vector<std::pair<int64_t, int64_t>> pids;  // old pid -> new pid
};

struct MergeResult {
  bool ok = false;
  std::string error;
  int64_t base_t0_epoch_ns = 0;  // T0 of the merged trace: the earliest input's
  uint64_t events = 0;
  std::vector<MergeInput> inputs;
};

// Reads every input twice (metadata first, then events) and writes one
// trace whose time zero is the earliest T0. Every input must carry an
// epprof_metadata record with t0_epoch_ns. A pid already used by an earlier
// input gets a new number; clashing process names get the input's file name
// appended; flow ids are shifted so they stay unique. The output follows
// io::AtomicFile's rules: replaced atomically, never an input, never a
// directory, device, FIFO or socket; a failed merge leaves nothing behind.
MergeResult merge_traces(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace epprof::report
