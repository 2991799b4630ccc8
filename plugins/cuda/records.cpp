#include "records.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
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
}

uint64_t RecordConverter::external_id(uint32_t correlation_id) const {
  auto it = external_.find(correlation_id);
  return it == external_.end() ? 0 : it->second;
}

std::vector<DeviceEvent> RecordConverter::convert(const TimeBase& time, int64_t scope_begin_ns,
                                                  int64_t scope_end_ns, ConversionStats* stats) const {
  ConversionStats local;
  ConversionStats& st = stats ? *stats : local;
  st.external_correlations = external_count_;
  std::vector<DeviceEvent> out;
  out.reserve(pending());

  auto common = [&](DeviceEvent& e, uint32_t correlation_id, uint64_t start, uint64_t end, uint32_t device,
                    uint32_t stream) {
    e.ts_ns = time.to_timeline(start);
    e.dur_ns = duration(start, end, &st);
    e.correlation_id = external_id(correlation_id);
    e.track = track_of(device, stream);
    e.args.emplace_back("stream", std::to_string(stream));
    e.args.emplace_back("device", std::to_string(device));
    e.args.emplace_back("cupti_correlation_id", std::to_string(correlation_id));
  };
  auto finish = [&](DeviceEvent& e) {
    if (e.correlation_id == 0) {
      ++st.unattributed;
      e.args.emplace_back("unattributed", "true");
    }
    out.push_back(std::move(e));
  };

  for (const KernelRecord& r : kernels_) {
    if (!in_scope(r.start_ns, scope_begin_ns, scope_end_ns)) {
      ++st.outside_scope;
      continue;
    }
    DeviceEvent e;
    e.category = EPPROF_CATEGORY_KERNEL;
    e.name = demangle(r.name.empty() ? std::string("<unnamed kernel>") : r.name);
    common(e, r.correlation_id, r.start_ns, r.end_ns, r.device_id, r.stream_id);
    e.args.emplace_back("grid", format_dim3(r.grid));
    e.args.emplace_back("block", format_dim3(r.block));
    e.args.emplace_back("shared_memory_bytes", std::to_string(int64_t(r.static_shared_bytes) + r.dynamic_shared_bytes));
    e.args.emplace_back("registers_per_thread", std::to_string(r.registers_per_thread));
    ++st.kernels;
    finish(e);
  }
  for (const MemcpyRecord& r : memcpys_) {
    if (!in_scope(r.start_ns, scope_begin_ns, scope_end_ns)) {
      ++st.outside_scope;
      continue;
    }
    DeviceEvent e;
    e.category = EPPROF_CATEGORY_MEMCPY;
    e.name = "Memcpy" + copy_kind_name(r.copy_kind);
    common(e, r.correlation_id, r.start_ns, r.end_ns, r.device_id, r.stream_id);
    e.args.emplace_back("bytes", std::to_string(r.bytes));
    e.args.emplace_back("direction", copy_kind_name(r.copy_kind));
    ++st.memcpys;
    finish(e);
  }
  for (const MemsetRecord& r : memsets_) {
    if (!in_scope(r.start_ns, scope_begin_ns, scope_end_ns)) {
      ++st.outside_scope;
      continue;
    }
    DeviceEvent e;
    e.category = EPPROF_CATEGORY_MEMCPY;
    e.name = "Memset";
    common(e, r.correlation_id, r.start_ns, r.end_ns, r.device_id, r.stream_id);
    e.args.emplace_back("bytes", std::to_string(r.bytes));
    e.args.emplace_back("value", std::to_string(r.value));
    ++st.memsets;
    finish(e);
  }
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
  std::stable_sort(out.begin(), out.end(), [](const DeviceEvent& a, const DeviceEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> RecordConverter::streams() const {
  std::set<std::pair<uint32_t, uint32_t>> s;
  for (const auto& r : kernels_) s.emplace(r.device_id, r.stream_id);
  for (const auto& r : memcpys_) s.emplace(r.device_id, r.stream_id);
  for (const auto& r : memsets_) s.emplace(r.device_id, r.stream_id);
  return {s.begin(), s.end()};
}

}  // namespace epprof::cuda
