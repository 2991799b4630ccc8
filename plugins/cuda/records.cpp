#include "records.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

namespace epprof::cuda {

namespace {

// cuBLAS kernels arrive mangled; the trace shows what a person can read.
std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* s = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && s ? std::string(s) : name;
  std::free(s);
  return out;
}

int64_t duration(uint64_t start, uint64_t end, ConversionStats* stats) {
  if (end < start) {
    ++stats->clamped;
    return 0;
  }
  return static_cast<int64_t>(end - start);
}

bool in_scope(uint64_t start, int64_t begin, int64_t end) {
  const int64_t s = static_cast<int64_t>(start);
  return s >= begin && s <= end;
}

}  // namespace

std::string copy_kind_name(uint8_t kind) {
  static const char* const kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                       "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(CopyKind::PtoP) + 1,
                "one name per CopyKind, in order");
  if (kind < sizeof kNames / sizeof kNames[0]) return kNames[kind];
  return "kind " + std::to_string(kind);
}

int64_t track_of(uint32_t device_id, uint32_t stream_id) {
  return static_cast<int64_t>((static_cast<uint64_t>(device_id) << 32) | stream_id);
}

std::string track_name(uint32_t device_id, uint32_t stream_id) {
  if (device_id == kApiTrackDevice) return "CUDA API thread " + std::to_string(stream_id);
  return "CUDA device " + std::to_string(device_id) + " stream " + std::to_string(stream_id);
}

std::string format_dim3(const int32_t v[3]) {
  return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "]";
}

void RecordConverter::add(const ExternalCorrelationRecord& r) {
  if (r.external_kind != kExternalKindEpprof) return;
  ++external_count_;
  // Nested pushes give one record per kind: the innermost id. One per
  // CUPTI id is all there is; keep the first if CUPTI ever repeats one.
  external_.emplace(r.correlation_id, r.external_id);
}

void RecordConverter::add(const RecordBatch& b) {
  kernels_.insert(kernels_.end(), b.kernels.begin(), b.kernels.end());
  memcpys_.insert(memcpys_.end(), b.memcpys.begin(), b.memcpys.end());
  memsets_.insert(memsets_.end(), b.memsets.begin(), b.memsets.end());
  memory_.insert(memory_.end(), b.memory.begin(), b.memory.end());
  for (const auto& r : b.external) add(r);
  for (const auto& r : b.api) add(r);
}

uint64_t RecordConverter::external_id(uint32_t correlation_id, uint32_t fallback_id) const {
  auto it = external_.find(correlation_id);
  if (it == external_.end() && fallback_id != 0) it = external_.find(fallback_id);
  return it == external_.end() ? 0 : it->second;
}

const ApiRecord* RecordConverter::call_of(uint32_t correlation_id, uint32_t fallback_id) const {
  auto it = api_.find(correlation_id);
  if (it == api_.end() && fallback_id != 0) it = api_.find(fallback_id);
  return it == api_.end() ? nullptr : &it->second;
}

std::vector<DeviceEvent> RecordConverter::convert(const TimeBase& time, int64_t scope_begin_ns,
                                                  int64_t scope_end_ns, ConversionStats* stats) const {
  ConversionStats local;
  ConversionStats& st = stats ? *stats : local;
  st.external_correlations = external_count_;
  st.api = api_.size();
  std::vector<DeviceEvent> out;
  out.reserve(pending());

  // Whether a device record [start, end] becomes an event, counting why not.
  auto keep = [&](uint64_t start, uint64_t end) {
    if (start == 0 && end == 0) {
      ++st.untimed;
      return false;
    }
    if (!in_scope(start, scope_begin_ns, scope_end_ns)) {
      ++st.outside_scope;
      return false;
    }
    return true;
  };
  // The clock check: no device work starts before the call that issued it.
  auto check_call = [&](uint64_t start, uint32_t correlation_id, uint32_t fallback_id) {
    const ApiRecord* call = call_of(correlation_id, fallback_id);
    if (!call || call->start_ns == 0) return;
    ++st.with_call;
    const int64_t lead = static_cast<int64_t>(call->start_ns) - static_cast<int64_t>(start);
    if (lead > 0) {
      ++st.before_call;
      st.worst_before_call_ns = std::max(st.worst_before_call_ns, lead);
    }
  };
  auto common = [&](DeviceEvent& e, uint32_t correlation_id, uint32_t fallback_id, uint64_t start, uint64_t end,
                    uint32_t device, uint32_t stream) {
    e.ts_ns = time.to_timeline(start);
    e.dur_ns = duration(start, end, &st);
    e.correlation_id = external_id(correlation_id, fallback_id);
    e.track = track_of(device, stream);
    e.args.emplace_back("stream", std::to_string(stream));
    e.args.emplace_back("device", std::to_string(device));
    e.args.emplace_back("cupti_correlation_id", std::to_string(correlation_id));
    check_call(start, correlation_id, fallback_id);
  };
  auto finish = [&](DeviceEvent& e) {
    if (e.correlation_id == 0) {
      ++st.unattributed;
      e.args.emplace_back("unattributed", "true");
    }
    out.push_back(std::move(e));
  };

  for (const KernelRecord& r : kernels_) {
    if (!keep(r.start_ns, r.end_ns)) continue;
    DeviceEvent e;
    e.category = EPPROF_CATEGORY_KERNEL;
    e.name = demangle(r.name.empty() ? std::string("<unnamed kernel>") : r.name);
    common(e, r.correlation_id, 0, r.start_ns, r.end_ns, r.device_id, r.stream_id);
    e.args.emplace_back("grid", format_dim3(r.grid));
    e.args.emplace_back("block", format_dim3(r.block));
    e.args.emplace_back("shared_memory_bytes", std::to_string(int64_t(r.static_shared_bytes) + r.dynamic_shared_bytes));
    e.args.emplace_back("registers_per_thread", std::to_string(r.registers_per_thread));
    ++st.kernels;
    finish(e);
  }
  for (const MemcpyRecord& r : memcpys_) {
    if (!keep(r.start_ns, r.end_ns)) continue;
    DeviceEvent e;
    e.category = EPPROF_CATEGORY_MEMCPY;
    e.name = "Memcpy" + copy_kind_name(r.copy_kind);
    common(e, r.correlation_id, r.runtime_correlation_id, r.start_ns, r.end_ns, r.device_id, r.stream_id);
    if (r.runtime_correlation_id) e.args.emplace_back("cupti_runtime_correlation_id", std::to_string(r.runtime_correlation_id));
    e.args.emplace_back("bytes", std::to_string(r.bytes));
    e.args.emplace_back("direction", copy_kind_name(r.copy_kind));
    ++st.memcpys;
    finish(e);
  }
  // Clock probes are memsets under the plugin's own external ids.
  std::unordered_map<uint64_t, const MemsetRecord*> probe_records;
  for (const MemsetRecord& r : memsets_) {
    const uint64_t id = external_id(r.correlation_id);
    if (id >= kProbeExternalIdBase) {
      probe_records.emplace(id, &r);
      continue;
    }
    if (!keep(r.start_ns, r.end_ns)) continue;
    DeviceEvent e;
    e.category = EPPROF_CATEGORY_MEMCPY;
    e.name = "Memset";
    common(e, r.correlation_id, 0, r.start_ns, r.end_ns, r.device_id, r.stream_id);
    e.args.emplace_back("bytes", std::to_string(r.bytes));
    e.args.emplace_back("value", std::to_string(r.value));
    ++st.memsets;
    finish(e);
  }
  std::map<uint32_t, int64_t> tightest;  // group → its tightest bound
  for (const ClockProbe& p : probes_) {
    auto it = probe_records.find(p.id);
    if (it == probe_records.end() || it->second->start_ns == 0 || it->second->end_ns == 0) continue;
    const int64_t s = static_cast<int64_t>(it->second->start_ns), e = static_cast<int64_t>(it->second->end_ns);
    const int64_t bound = std::max(std::abs(s - p.host_before_ns), std::abs(e - p.host_after_ns));
    auto [t, fresh] = tightest.emplace(p.group, bound);
    if (!fresh) t->second = std::min(t->second, bound);
    if (fresh) {
      if (!st.probe_bounds.empty()) st.probe_bounds += "; ";
      st.probe_bounds += p.group == 0 ? "start" : p.group == 1 ? "end" : "group " + std::to_string(p.group);
    }
    st.probe_bounds += " " + std::to_string(bound);
    ++st.probes_matched;
  }
  for (const auto& [group, bound] : tightest) st.clock_error_bound_ns = std::max(st.clock_error_bound_ns, bound);
  for (const MemoryRecord& r : memory_) {
    if (!in_scope(r.timestamp_ns, scope_begin_ns, scope_end_ns)) {
      ++st.outside_scope;
      continue;
    }
    DeviceEvent e;
    e.category = EPPROF_CATEGORY_MEMORY;
    e.name = "cuda:" + std::to_string(r.device_id);
    e.ts_ns = time.to_timeline(r.timestamp_ns);
    e.correlation_id = external_id(r.correlation_id);
    e.track = track_of(r.device_id, r.stream_id);
    e.args.emplace_back("kind", r.release ? "free" : "alloc");
    e.args.emplace_back("allocation_id", std::to_string(r.address));
    if (!r.release) e.args.emplace_back("bytes", std::to_string(r.bytes));
    e.args.emplace_back("cupti_correlation_id", std::to_string(r.correlation_id));
    ++st.memory;
    out.push_back(std::move(e));  // attributed by its id, or owned by no node: not "unattributed" work
  }
  if (export_api_) {
    for (const auto& [id, r] : api_) {
      if (!keep(r.start_ns, r.end_ns)) continue;
      const uint64_t node = external_id(id);
      if (node >= kProbeExternalIdBase) continue;
      DeviceEvent e;
      e.category = EPPROF_CATEGORY_API;
      e.name = r.name ? r.name : std::string(r.driver ? "driver" : "runtime") + " call " + std::to_string(r.cbid);
      e.ts_ns = time.to_timeline(r.start_ns);
      e.dur_ns = duration(r.start_ns, r.end_ns, &st);
      e.correlation_id = node;
      e.track = api_track_of(r.thread_id);
      e.args.emplace_back("cbid", std::to_string(r.cbid));
      e.args.emplace_back("cupti_correlation_id", std::to_string(id));
      e.args.emplace_back("thread", std::to_string(r.thread_id));
      out.push_back(std::move(e));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const DeviceEvent& a, const DeviceEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> RecordConverter::streams() const {
  std::set<std::pair<uint32_t, uint32_t>> s;
  for (const auto& r : kernels_) s.emplace(r.device_id, r.stream_id);
  for (const auto& r : memcpys_) s.emplace(r.device_id, r.stream_id);
  for (const auto& r : memsets_) s.emplace(r.device_id, r.stream_id);
  if (export_api_)
    for (const auto& kv : api_) s.emplace(kApiTrackDevice, kv.second.thread_id);
  return {s.begin(), s.end()};
}

}  // namespace epprof::cuda
