#include "core/recording.h"

#include <cstring>
#include <stdexcept>

#include "core/args.h"
#include "io/atomic_file.h"

namespace epprof::core {
namespace {

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Recording::Recording(ScopeConfig config)
    : config_(std::move(config)),
      recorder_(config_.memory_budget_bytes, config_.disk_budget_bytes,
                config_.spill_dir.empty() ? directory_of(config_.trace_path) : config_.spill_dir) {
  std::string error;
  file_ = io::AtomicFile::create(config_.trace_path, &error);
  if (!file_) throw std::runtime_error(error);
}

Recording::~Recording() = default;

void Recording::start() {
  // The wall-clock reading is bracketed by two monotonic ones so traces
  // from several processes can be aligned.
  int64_t m0 = monotonic_ns();
  t0_epoch_ns_ = realtime_ns();
  int64_t m1 = monotonic_ns();
  t0_epoch_ns_ -= (m1 - m0) / 2;
  start_pair_ = read_clock_pair();
  provisional_ = TickConverter(start_pair_, nominal_ns_per_tick());
}

void Recording::stop() { stop_pair_ = read_clock_pair(); }

void Recording::set_metadata(std::string key, std::string value) {
  std::lock_guard<std::mutex> lock(meta_mu_);
  for (auto& kv : metadata_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

std::vector<std::pair<std::string, std::string>> Recording::metadata() const {
  std::lock_guard<std::mutex> lock(meta_mu_);
  return metadata_;
}

epprof_status* Recording::write_with_args(ThreadStream& s, const OpenEvent& o, uint64_t dur, uint8_t flags,
                                          const epprof_arg* args, size_t num_args, const char* fn) noexcept {
  // Validate and size everything before writing anything.
  ArgPlan plan;
  if (epprof_status* st = plan_args(fn, args, num_args, /*sets_allowed=*/true, plan)) return st;
  const uint32_t slots = uint32_t(slots_for_bytes(plan.bytes));
  Record* r = recorder_.reserve(s, 1 + slots);
  *r = Record{o.ts, dur, o.correlation_id, o.name, o.category, flags, uint16_t(slots)};
  auto* p = reinterpret_cast<unsigned char*>(r + 1);
  std::memset(p, 0, size_t(slots) * kSlotBytes);
  encode_args(p, args, num_args, plan);
  return nullptr;
}

epprof_status* Recording::record(ThreadStream& s, uint8_t category, uint32_t name, uint64_t id, int64_t start_ns,
                                 int64_t dur_ns, const epprof_arg* args, size_t num_args) noexcept {
  // Host-clock ns back to ticks, so every record shares one time base.
  const double tpn = 1.0 / provisional_.ns_per_tick();
  const uint64_t ts = start_pair_.ticks + uint64_t(int64_t(double(start_ns - start_pair_.ns) * tpn));
  if (num_args == 0) {
    Record* r = recorder_.reserve(s, 1);
    *r = Record{ts, uint64_t(dur_ns), id, name, category, kRecordDurationNs, 0};
    return nullptr;
  }
  return write_with_args(s, OpenEvent{ts, id, name, category}, uint64_t(dur_ns), kRecordDurationNs, args, num_args,
                         "epprof_event_record");
}

}  // namespace epprof::core
