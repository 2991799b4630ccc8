#include "scope/device_events.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace epprof::scope {
namespace {

// Device tracks get thread ids of their own, far above kernel tids
// (pid_max is at most 2^22), one block per plugin.
constexpr int64_t kDeviceTidBase = int64_t(1) << 30;
constexpr int64_t kDeviceTidsPerPlugin = int64_t(1) << 20;

}  // namespace

DeviceEvents collect_device_events(const std::vector<std::unique_ptr<core::EpHooks>>& eps, int64_t pid) {
  DeviceEvents out;
  out.sinks.resize(eps.size());
  for (size_t i = 0; i < eps.size(); ++i) eps[i]->end_profiling(&out.sinks[i]);
  for (uint32_t p = 0; p < out.sinks.size(); ++p) {
    const epprof_event_sink& sink = out.sinks[p];
    std::unordered_map<int64_t, int64_t> tid_map;  // plugin track → trace tid
    for (const epprof_event& e : sink.events) {
      int64_t tid = e.tid;
      if (is_device_category(e.category)) {
        auto [it, fresh] = tid_map.emplace(e.tid, 0);
        if (fresh) {
          it->second = kDeviceTidBase + int64_t(p) * kDeviceTidsPerPlugin + int64_t(tid_map.size() - 1);
          auto named = sink.track_names.find(e.tid);
          out.tracks.push_back({pid, it->second,
                                named != sink.track_names.end() ? named->second
                                                                : eps[p]->name() + " track " + std::to_string(e.tid)});
        }
        tid = it->second;
      }
      (e.category == EPPROF_CATEGORY_MEMORY ? out.memory : out.events).push_back(DeviceEvent{&e, p, tid});
    }
  }
  auto by_start = [](const DeviceEvent& a, const DeviceEvent& b) { return a.event->ts_ns < b.event->ts_ns; };
  std::stable_sort(out.events.begin(), out.events.end(), by_start);
  std::stable_sort(out.memory.begin(), out.memory.end(), by_start);
  return out;
}

}  // namespace epprof::scope
