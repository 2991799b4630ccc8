// Which model_run holds a moment: the rule the report (trace_model) and the
// trace database's writer both apply, so a run's events are the same in
// `epprof report` and in the database's `run` columns. Header-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace epprof::tracedb {

template <typename Time, typename Id>
class RunLookup {
 public:
  struct Run {
    Id id;
    Time start, end;
  };

  void add(int64_t pid, const Run& r) { by_pid_[pid].push_back(r); }
  // Once every run is added: each process's runs by start (stable).
  void sort() {
    for (auto& [pid, v] : by_pid_)
      std::stable_sort(v.begin(), v.end(), [](const Run& a, const Run& b) { return a.start < b.start; });
  }
  const std::map<int64_t, std::vector<Run>>& by_pid() const { return by_pid_; }

  // The run of process `pid` whose interval holds `t` (its end widened by
  // `slack`): the latest one started at or before t that has not ended,
  // looking back a few runs for overlapping ones (several threads running
  // the model at once). `none` if there is none.
  Id find(int64_t pid, Time t, Time slack, Id none) const {
    auto it = by_pid_.find(pid);
    if (it == by_pid_.end()) return none;
    const auto& v = it->second;
    auto pos = std::upper_bound(v.begin(), v.end(), t, [](Time x, const Run& r) { return x < r.start; });
    for (int back = 0; pos != v.begin() && back < 8; ++back) {
      --pos;
      if (t <= pos->end + slack) return pos->id;
    }
    return none;
  }

 private:
  std::map<int64_t, std::vector<Run>> by_pid_;
};

}  // namespace epprof::tracedb
