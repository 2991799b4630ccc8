#include "core/profiler.h"

#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "abi/status.h"
#include "core/intern.h"
#include "export/atomic_file.h"

namespace epprof::core {
namespace {

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Bytes an arg value takes in the payload, or 0 when it must be interned.
size_t inline_value_bytes(const epprof_arg& a, size_t* len) {
  if (a.type == EPPROF_ARG_INT64) return 8;
  *len = std::strlen(a.value.str);
  if (*len > kMaxInlineValue) return 0;
  return 4 + ((*len + 3) & ~size_t(3));
}

}  // namespace

Profiler::Profiler(ProfilerConfig config)
    : config_(std::move(config)),
      recorder_(config_.memory_budget_bytes, config_.disk_budget_bytes,
                config_.spill_dir.empty() ? directory_of(config_.trace_path) : config_.spill_dir) {
  std::string error;
  file_ = exporter::AtomicFile::create(config_.trace_path, &error);
  if (!file_) throw std::runtime_error(error);
}

Profiler::~Profiler() = default;

void Profiler::add_plugin(std::shared_ptr<abi::LoadedPlugin> plugin) {
  auto ep = std::make_unique<abi::EpInstance>(std::move(plugin), uint32_t(eps_.size()));
  eps_want_events_ = eps_want_events_ || ep->wants_events();
  eps_want_stop_ = eps_want_stop_ || ep->wants_stop_event();
  eps_.push_back(std::move(ep));
}

void Profiler::set_metadata(std::string key, std::string value) {
  std::lock_guard<std::mutex> lock(meta_mu_);
  for (auto& kv : metadata_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void Profiler::start() {
  // T0 on both clocks: the wall-clock reading is bracketed by two monotonic
  // ones so traces from several processes can be aligned.
  int64_t m0 = monotonic_ns();
  t0_epoch_ns_ = realtime_ns();
  int64_t m1 = monotonic_ns();
  t0_epoch_ns_ -= (m1 - m0) / 2;
  start_pair_ = read_clock_pair();
  provisional_ = TickConverter(start_pair_, nominal_ns_per_tick());
  state_.store(State::kRunning, std::memory_order_release);
  for (auto& ep : eps_) ep->start_profiling(monotonic_ns() - start_pair_.ns);
}

std::string Profiler::stop(epprof_trace_stats* stats) {
  stop_pair_ = read_clock_pair();
  state_.store(State::kStopped, std::memory_order_release);
  return write_trace(stats);
}

epprof_status* Profiler::too_deep() const noexcept {
  return abi::status_from(EPPROF_RESOURCE_EXHAUSTED, [&] { return std::string("epprof_event_begin: more than " + std::to_string(kMaxOpenEvents) +
                              " nested events are open on this thread"); });
}

epprof_status* Profiler::mismatched_end(const ThreadStream& s, uint64_t id) const noexcept {
  if (s.depth == 0)
    return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: no event is open on this thread (correlation id " +
                                std::to_string(id) + ")"); });
  return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: correlation id " + std::to_string(id) +
                              " is not the innermost open event on this thread (that is " +
                              std::to_string(s.open[s.depth - 1].correlation_id) +
                              "); events must be properly nested"); });
}

epprof_status* Profiler::write_with_args(ThreadStream& s, const OpenEvent& o, uint64_t dur,
                                         uint8_t flags, const epprof_arg* args,
                                         size_t num_args) noexcept {
  if (!args)
    return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: args is NULL with num_args = " +
                                std::to_string(num_args)); });
  if (num_args > kMaxArgs)
    return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: " + std::to_string(num_args) +
                                " args; at most " + std::to_string(kMaxArgs) + " are allowed"); });
  // Validate and size everything before writing anything.
  size_t lens[kMaxArgs];
  uint32_t big_ids[kMaxArgs];
  size_t bytes = 4;
  for (size_t i = 0; i < num_args; ++i) {
    const epprof_arg& a = args[i];
    if (!is_interned(a.key))
      return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: arg " + std::to_string(i) +
                                  " has a key that is not an interned name id"); });
    if (a.type > EPPROF_ARG_JSON_NAME)
      return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: arg '" + *interned(a.key) + "' has unknown type " +
                                  std::to_string(a.type)); });
    if (a.type == EPPROF_ARG_NAME || a.type == EPPROF_ARG_JSON_NAME) {
      if (!is_interned(a.value.name))
        return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: value of arg '" + *interned(a.key) +
                                    "' is not an interned name id"); });
      big_ids[i] = a.value.name;
      bytes += 8 + 4;
      continue;
    }
    if (a.type != EPPROF_ARG_INT64 && !a.value.str)
      return abi::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: value of arg '" + *interned(a.key) + "' is NULL"); });
    big_ids[i] = 0;
    size_t v = inline_value_bytes(a, &lens[i]);
    if (v == 0) {
      try {
        big_ids[i] = intern(std::string_view(a.value.str, lens[i]));
      } catch (const std::bad_alloc&) {
        return abi::out_of_memory_status();
      }
      if (!big_ids[i])
        return abi::status_from(EPPROF_RESOURCE_EXHAUSTED, [&] { return std::string("epprof_event_end: the string table is full"); });
      v = 4;
    }
    bytes += 8 + v;
  }
  const uint32_t slots = uint32_t(slots_for_bytes(bytes));
  Record* r = recorder_.reserve(s, 1 + slots);
  *r = Record{o.ts, dur, o.correlation_id, o.name, o.category, flags, uint16_t(slots)};
  auto* p = reinterpret_cast<unsigned char*>(r + 1);
  std::memset(p, 0, size_t(slots) * kSlotBytes);
  uint32_t count = uint32_t(num_args);
  std::memcpy(p, &count, 4);
  p += 4;
  for (size_t i = 0; i < num_args; ++i) {
    const epprof_arg& a = args[i];
    std::memcpy(p, &a.key, 4);
    const bool json = a.type == EPPROF_ARG_JSON || a.type == EPPROF_ARG_JSON_NAME;
    if (a.type == EPPROF_ARG_INT64) {
      p[4] = uint8_t(StoredArg::kInt64);
      std::memcpy(p + 8, &a.value.i64, 8);
      p += 16;
    } else if (big_ids[i]) {
      p[4] = uint8_t(json ? StoredArg::kJsonId : StoredArg::kStringId);
      std::memcpy(p + 8, &big_ids[i], 4);
      p += 12;
    } else {
      p[4] = uint8_t(json ? StoredArg::kJson : StoredArg::kString);
      uint32_t len = uint32_t(lens[i]);
      std::memcpy(p + 8, &len, 4);
      std::memcpy(p + 12, a.value.str, len);
      p += 12 + ((len + 3) & ~3u);
    }
  }
  return nullptr;
}

void Profiler::notify_stop(const ThreadStream& s, const OpenEvent& o, uint64_t end_ticks,
                           const epprof_arg* args, size_t num_args) noexcept {
  epprof_event view;
  const std::string* name = interned(o.name);
  const int64_t ts = provisional_.to_ns(o.ts) - start_pair_.ns;
  abi::make_event_view(view, epprof_category(o.category), name ? name->c_str() : "",
                       pid_, s.tid, ts, provisional_.duration_ns(end_ticks - o.ts),
                       o.correlation_id, args, num_args);
  for (auto& ep : eps_) ep->stop_event(o.correlation_id, &view);
}

epprof_status* Profiler::record(ThreadStream& s, uint8_t category, uint32_t name, uint64_t id,
                                int64_t start_ns, int64_t dur_ns, const epprof_arg* args,
                                size_t num_args) noexcept {
  // Host-clock ns back to ticks, so every record shares one time base.
  const double tpn = 1.0 / provisional_.ns_per_tick();
  const uint64_t ts = start_pair_.ticks + uint64_t(int64_t(double(start_ns - start_pair_.ns) * tpn));
  OpenEvent o{ts, id, name, category};
  if (num_args == 0) {
    Record* r = recorder_.reserve(s, 1);
    *r = Record{ts, uint64_t(dur_ns), id, name, category, kRecordDurationNs, 0};
    return nullptr;
  }
  return write_with_args(s, o, uint64_t(dur_ns), kRecordDurationNs, args, num_args);
}

}  // namespace epprof::core
