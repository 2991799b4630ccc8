// C entry points of epprof/counters.h: the registry queries, the
// configuration table, and the counting contexts (the per-dispatch hot
// path: a handle check, one read() per boundary, no lock, no allocation).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/clock.h"
#include "core/handle_table.h"
#include "counters/registry.h"

namespace epprof::counters {
namespace {

using base::make_status;
using base::null_argument;

constexpr size_t kMinInfoSize = offsetof(epprof_counter_info, size) + sizeof(size_t);

// ---- Configurations (not on the hot path) ----

// A configuration is shared: counting contexts keep theirs alive after the
// configuration's handle is destroyed.
struct ConfigOwner {
  std::shared_ptr<const Config> config;  // under the table's lock
};
core::HandleTable<const Config, 1024, ConfigOwner> g_configs;

std::shared_ptr<const Config> config_get(epprof_counter_config_t h) {
  const auto lock = g_configs.lock();
  return g_configs.find(h.handle) ? g_configs.slot_of(h.handle).extra.config : nullptr;
}

epprof_status* stale_config(const char* fn) {
  return make_status(EPPROF_NOT_FOUND, std::string(fn) + ": unknown or destroyed counter configuration handle");
}

// One count of a configuration into *out: `count` of it.
template <class T, class Count>
epprof_status* config_count(const char* fn, epprof_counter_config_t config, T* out, Count count) {
  const auto c = config_get(config);
  if (!c) return stale_config(fn);
  if (!out) return null_argument(fn, "out");
  *out = count(*c);
  return nullptr;
}

// ---- Counting contexts ----

// The calling thread's id for owner checks: unique per thread, never reused.
// Initial-exec static TLS: no __tls_get_addr call on each counting call.
std::atomic<uint64_t> g_next_thread_id{1};
__thread uint64_t t_thread_id __attribute__((tls_model("initial-exec"))) = 0;
inline uint64_t this_thread_id() noexcept {
  if (__builtin_expect(t_thread_id == 0, 0)) t_thread_id = g_next_thread_id.fetch_add(1, std::memory_order_relaxed);
  return t_thread_id;
}

constexpr uint32_t kNoPass = 0xFFFFFFFEu;

struct Context {
  std::shared_ptr<const Config> config;
  std::unique_ptr<GroupSet> groups;
  uint64_t owner = 0;
  uint32_t selected = kNoPass;  // the pass whose group(s) are enabled
  uint32_t pass = kNoPass;      // the pass of the open or last interval
  bool open = false;
  bool have_interval = false;
  bool needs_clock = false;  // duration_ns (or a ratio of it) is in the config
  int64_t t_begin = 0;
  int64_t t_end = 0;
  std::vector<size_t> offset;    // [pass] -> start of its words in begin/end
  std::vector<size_t> position;  // [counter] -> index among its pass's group members
  std::vector<uint64_t> begin, end;
};

// Counting calls look their context up without a lock; create and destroy
// take the table's.
core::HandleTable<Context, 4096> g_contexts;

inline Context* context_get(uint64_t handle) noexcept { return g_contexts.find(handle); }

[[gnu::cold, gnu::noinline]] epprof_status* context_error(const char* fn, epprof_status_code code,
                                                          const char* what) noexcept {
  return base::status_from(code, [&] { return std::string(fn) + ": " + what; });
}

[[gnu::cold, gnu::noinline]] epprof_status* stale_context(const char* fn) noexcept {
  return context_error(fn, EPPROF_NOT_FOUND, "unknown or destroyed counting context handle");
}

[[gnu::cold, gnu::noinline]] epprof_status* io_error(const char* fn, int err) noexcept {
  return base::status_from(EPPROF_IO_ERROR, [&] {
    return std::string(fn) + ": reading the counter group failed: " + strerrorname_np(err) + " (" +
           std::strerror(err) + ")";
  });
}

// Snapshots the enabled group(s) of `pass` into `out`. 0 or an errno.
inline int snapshot(Context* c, uint32_t pass, uint64_t* out) noexcept {
  if (pass != EPPROF_COUNTER_PASS_MULTIPLEX)
    return c->groups->read(pass, out + c->offset[pass], c->offset[pass + 1] - c->offset[pass]);
  for (uint32_t p = 0; p + 1 < c->offset.size(); ++p)
    if (int err = c->groups->read(p, out + c->offset[p], c->offset[p + 1] - c->offset[p])) return err;
  return 0;
}

bool in_interval(uint32_t counter_pass, uint32_t interval_pass) {
  return interval_pass == EPPROF_COUNTER_PASS_MULTIPLEX || counter_pass == interval_pass;
}

}  // namespace
}  // namespace epprof::counters

using namespace epprof::counters;  // NOLINT: file-local convenience in a .cpp

extern "C" {

// ---- Registry ----

EPPROF_API epprof_status* epprof_counter_device_count(size_t* out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  *out = device_names().size();
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_device_name(size_t index, const char** out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  const std::vector<std::string> names = device_names();
  if (index >= names.size())
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(index) +
                                                    " out of range (" + std::to_string(names.size()) +
                                                    " devices)");
  *out = find_device(names[index])->name.c_str();
  return nullptr;
  EPPROF_API_END
}

static epprof_status* device_or_error(const char* fn, const char* device, Device** out) {
  if (!device) return null_argument(fn, "device");
  *out = find_device(device);
  if (!*out) {
    std::string known;
    for (const std::string& n : device_names()) known += (known.empty() ? "" : ", ") + n;
    return make_status(EPPROF_NOT_FOUND,
                       std::string(fn) + ": unknown counter device '" + device + "'; known: " + known);
  }
  return nullptr;
}

EPPROF_API epprof_status* epprof_counter_count(const char* device, size_t* out) {
  EPPROF_API_BEGIN
  Device* d = nullptr;
  if (epprof_status* st = device_or_error(fn, device, &d)) return st;
  if (!out) return null_argument(fn, "out");
  *out = d->listed.size();
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_get_info(const char* device, size_t index, epprof_counter_info* out) {
  EPPROF_API_BEGIN
  Device* d = nullptr;
  if (epprof_status* st = device_or_error(fn, device, &d)) return st;
  if (!out) return null_argument(fn, "out");
  if (out->size < kMinInfoSize)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": out->size is not set");
  if (index >= d->listed.size())
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(index) +
                                                    " out of range (device '" + d->name + "' lists " +
                                                    std::to_string(d->listed.size()) + " counters)");
  d->listed[index].fill(out);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_find(const char* device, const char* name, epprof_counter_info* out) {
  EPPROF_API_BEGIN
  Device* d = nullptr;
  if (epprof_status* st = device_or_error(fn, device, &d)) return st;
  if (!name) return null_argument(fn, "name");
  if (!out) return null_argument(fn, "out");
  if (out->size < kMinInfoSize)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": out->size is not set");
  std::string message;
  const CounterDef* c = find_counter(d, name, &message);
  if (!c) return make_status(EPPROF_NOT_FOUND, std::string(fn) + ": " + message);
  c->fill(out);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_register_fake_device(void) {
  EPPROF_API_BEGIN
  if (!find_device("fake-pmu")) register_device("fake-pmu", make_fake_pmu_backend());
  return nullptr;
  EPPROF_API_END
}

// ---- Configurations ----

EPPROF_API epprof_status* epprof_counter_config_create(const char* device, const char* const* names,
                                                       size_t num_names, epprof_counter_config_t* out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  auto config = std::make_shared<Config>();
  if (epprof_status* st = build_config(device, names, num_names, config.get())) return st;
  const uint64_t handle =
      g_configs.insert(config.get(), [&](uint64_t h) { g_configs.slot_of(h).extra.config = config; });
  if (handle == 0)
    return make_status(EPPROF_RESOURCE_EXHAUSTED, std::string(fn) + ": " + std::to_string(g_configs.kCapacity) +
                                                      " counter configurations exist");
  out->handle = handle;
  const Plan& plan = config->plan;
  if (plan.num_passes == 1) return nullptr;
  std::string msg = std::string(fn) + ": the counter set needs " + std::to_string(plan.num_passes) +
                    " passes on device '" + config->device->name + "' (" +
                    std::to_string(config->device->backend->num_programmable()) +
                    " programmable counters):";
  for (uint32_t p = 0; p < plan.num_passes; ++p) {
    msg += (p ? "; pass " : " pass ") + std::to_string(p) + ":";
    bool first = true;
    for (size_t i = 0; i < plan.counters.size(); ++i)
      if (plan.pass_of[i] == p) {
        msg += (first ? " " : ", ") + plan.counters[i]->name;
        first = false;
      }
  }
  return make_status(EPPROF_MULTIPASS, msg);
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_config_destroy(epprof_counter_config_t config) {
  EPPROF_API_BEGIN
  std::shared_ptr<const Config> doomed;  // released outside the lock
  {
    const auto lock = g_configs.lock();
    if (!g_configs.remove_locked(config.handle)) return stale_config(fn);
    doomed = std::move(g_configs.slot_of(config.handle).extra.config);
  }
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_config_counter_count(epprof_counter_config_t config, size_t* out) {
  EPPROF_API_BEGIN
  return config_count(fn, config, out, [](const Config& c) { return c.plan.counters.size(); });
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_config_get_counter(epprof_counter_config_t config, size_t index,
                                                            epprof_counter_info* info, uint32_t* pass) {
  EPPROF_API_BEGIN
  auto c = config_get(config);
  if (!c) return stale_config(fn);
  if (index >= c->plan.counters.size())
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(index) +
                                                    " out of range (" + std::to_string(c->plan.counters.size()) +
                                                    " counters)");
  if (info && info->size < kMinInfoSize)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": info->size is not set");
  if (info) c->plan.counters[index]->fill(info);
  if (pass) *pass = c->plan.pass_of[index];
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counter_config_pass_count(epprof_counter_config_t config, uint32_t* out) {
  EPPROF_API_BEGIN
  return config_count(fn, config, out, [](const Config& c) { return c.plan.num_passes; });
  EPPROF_API_END
}

// The deprecated spellings (counters.h).
EPPROF_API epprof_status* epprof_counter_config_get_num_counters(epprof_counter_config_t config, size_t* out) {
  return epprof_counter_config_counter_count(config, out);
}

EPPROF_API epprof_status* epprof_counter_config_get_num_passes(epprof_counter_config_t config, uint32_t* out) {
  return epprof_counter_config_pass_count(config, out);
}

EPPROF_API epprof_status* epprof_counter_config_get_pass(epprof_counter_config_t config, uint32_t pass,
                                                         size_t* indices, size_t capacity, size_t* count) {
  EPPROF_API_BEGIN
  auto c = config_get(config);
  if (!c) return stale_config(fn);
  if (!count) return null_argument(fn, "count");
  if (!indices && capacity > 0) return null_argument(fn, "indices (with capacity > 0)");
  if (pass >= c->plan.num_passes)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": pass " + std::to_string(pass) +
                                                    " out of range (" + std::to_string(c->plan.num_passes) +
                                                    " passes)");
  size_t n = 0;
  for (size_t i = 0; i < c->plan.counters.size(); ++i) {
    if (c->plan.pass_of[i] != pass) continue;
    if (n < capacity) indices[n] = i;
    ++n;
  }
  *count = n;
  return nullptr;
  EPPROF_API_END
}

// ---- Counting contexts ----

EPPROF_API epprof_status* epprof_counting_context_create(epprof_counter_config_t config,
                                                         epprof_counting_context_t* out) {
  EPPROF_API_BEGIN
  auto cfg = config_get(config);
  if (!cfg) return stale_config(fn);
  if (!out) return null_argument(fn, "out");
  auto ctx = std::make_unique<Context>();
  ctx->config = cfg;
  ctx->owner = this_thread_id();
  const Plan& plan = cfg->plan;
  ctx->offset.push_back(0);
  for (uint32_t p = 0; p < plan.num_passes; ++p) ctx->offset.push_back(ctx->offset.back() + 3 + plan.members[p].size());
  ctx->begin.assign(ctx->offset.back(), 0);
  ctx->end.assign(ctx->offset.back(), 0);
  ctx->position.assign(plan.counters.size(), 0);
  for (uint32_t p = 0; p < plan.num_passes; ++p)
    for (size_t k = 0; k < plan.members[p].size(); ++k) ctx->position[plan.members[p][k]] = k;
  for (const CounterDef* def : plan.counters)
    ctx->needs_clock |= def->source == Source::HostDuration;
  if (epprof_status* st = cfg->device->backend->open(plan, &ctx->groups)) return st;

  const uint64_t handle = g_contexts.insert(ctx.get());
  if (handle == 0)
    return make_status(EPPROF_RESOURCE_EXHAUSTED,
                       std::string(fn) + ": " + std::to_string(g_contexts.kCapacity) + " counting contexts exist");
  ctx.release();
  out->handle = handle;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counting_context_destroy(epprof_counting_context_t context) {
  EPPROF_API_BEGIN
  Context* doomed = g_contexts.remove(context.handle);
  if (!doomed) return stale_context(fn);
  delete doomed;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_counting_context_start(epprof_counting_context_t context, uint32_t pass) {
  const char* fn = "epprof_counting_context_start";
  Context* c = context_get(context.handle);
  if (__builtin_expect(!c, 0)) return stale_context(fn);
  if (__builtin_expect(c->owner != this_thread_id(), 0))
    return context_error(fn, EPPROF_FAILED_PRECONDITION, "called off the thread that created the context");
  if (__builtin_expect(c->open, 0)) return context_error(fn, EPPROF_FAILED_PRECONDITION, "an interval is already open");
  if (__builtin_expect(pass >= c->config->plan.num_passes && pass != EPPROF_COUNTER_PASS_MULTIPLEX, 0))
    return context_error(fn, EPPROF_INVALID_ARGUMENT, "pass out of range for the configuration");
  if (pass != c->selected) {
    if (int err = c->groups->select(pass)) return io_error(fn, err);
    c->selected = pass;
  }
  if (int err = snapshot(c, pass, c->begin.data())) return io_error(fn, err);
  // The wall clock only when duration_ns is wanted: it is the one cost a
  // software group pays besides its two reads.
  c->t_begin = c->needs_clock ? epprof::core::monotonic_ns() : 0;
  c->pass = pass;
  c->open = true;
  return nullptr;
}

EPPROF_API epprof_status* epprof_counting_context_stop(epprof_counting_context_t context) {
  const char* fn = "epprof_counting_context_stop";
  Context* c = context_get(context.handle);
  if (__builtin_expect(!c, 0)) return stale_context(fn);
  if (__builtin_expect(c->owner != this_thread_id(), 0))
    return context_error(fn, EPPROF_FAILED_PRECONDITION, "called off the thread that created the context");
  if (__builtin_expect(!c->open, 0)) return context_error(fn, EPPROF_FAILED_PRECONDITION, "no interval is open");
  const int64_t now = c->needs_clock ? epprof::core::monotonic_ns() : 0;
  c->open = false;
  if (int err = snapshot(c, c->pass, c->end.data())) {
    c->have_interval = false;
    return io_error(fn, err);
  }
  c->t_end = now;
  c->have_interval = true;
  return nullptr;
}

EPPROF_API epprof_status* epprof_counting_context_read(epprof_counting_context_t context,
                                                       const epprof_dispatch_measures* measures,
                                                       epprof_counter_value* values, size_t num_values) {
  const char* fn = "epprof_counting_context_read";
  Context* c = context_get(context.handle);
  if (__builtin_expect(!c, 0)) return stale_context(fn);
  if (__builtin_expect(c->owner != this_thread_id(), 0))
    return context_error(fn, EPPROF_FAILED_PRECONDITION, "called off the thread that created the context");
  const Plan& plan = c->config->plan;
  if (!values) return context_error(fn, EPPROF_INVALID_ARGUMENT, "values is NULL");
  if (num_values < plan.counters.size())
    return context_error(fn, EPPROF_INVALID_ARGUMENT, "num_values is less than the configuration's number of counters");
  if (measures && measures->size < sizeof(size_t))
    return context_error(fn, EPPROF_INVALID_ARGUMENT, "measures->size is not set");
  if (c->open) return context_error(fn, EPPROF_FAILED_PRECONDITION, "an interval is open (call stop first)");
  if (!c->have_interval) return context_error(fn, EPPROF_FAILED_PRECONDITION, "no interval has completed");

  // What the caller's measures struct covers.
  epprof_dispatch_measures m{};
  if (measures) std::memcpy(&m, measures, std::min(measures->size, sizeof m));
  // A field the caller's size does not cover is not known, whatever `known` says.
  auto covers = [&](size_t offset, size_t len) { return measures && measures->size >= offset + len; };
  if (!covers(offsetof(epprof_dispatch_measures, known), sizeof(uint32_t))) m.known = 0;
  if (!covers(offsetof(epprof_dispatch_measures, duration_ns), sizeof(uint64_t))) m.known &= ~EPPROF_MEASURE_DURATION;
  if (!covers(offsetof(epprof_dispatch_measures, flops), sizeof(double))) m.known &= ~EPPROF_MEASURE_FLOPS;
  if (!covers(offsetof(epprof_dispatch_measures, bytes), sizeof(double))) m.known &= ~EPPROF_MEASURE_BYTES;
  if (!(m.known & EPPROF_MEASURE_DURATION)) m.duration_ns = uint64_t(c->t_end - c->t_begin);

  const uint32_t ipass = c->pass;
  for (size_t i = 0; i < plan.counters.size(); ++i) {
    const CounterDef& def = *plan.counters[i];
    epprof_counter_value& v = values[i];
    v = epprof_counter_value{};
    v.pass = ipass;
    switch (def.source) {
      case Source::Backend: {
        const uint32_t p = plan.pass_of[i];
        if (!in_interval(p, ipass)) {
          v.flags = EPPROF_COUNTER_VALUE_NOT_IN_PASS;
          break;
        }
        const size_t off = c->offset[p];
        const uint64_t* b = c->begin.data() + off;
        const uint64_t* e = c->end.data() + off;
        v.raw = e[3 + c->position[i]] - b[3 + c->position[i]];
        v.time_enabled_ns = e[1] - b[1];
        v.time_running_ns = e[2] - b[2];
        if (v.time_enabled_ns > 0 && v.time_running_ns == 0) {
          v.raw = 0;
          v.flags = EPPROF_COUNTER_VALUE_NOT_RUNNING;
        } else if (v.time_running_ns < v.time_enabled_ns) {
          v.value = double(v.raw) * double(v.time_enabled_ns) / double(v.time_running_ns);
          v.flags = EPPROF_COUNTER_VALUE_VALID | EPPROF_COUNTER_VALUE_SCALED;
        } else {
          v.value = double(v.raw);
          v.flags = EPPROF_COUNTER_VALUE_VALID;
        }
        break;
      }
      case Source::HostDuration:
        v.value = double(m.duration_ns);
        v.flags = EPPROF_COUNTER_VALUE_VALID;
        break;
      case Source::HostFlops:
        v.value = (m.known & EPPROF_MEASURE_FLOPS) ? m.flops : 0.0;
        v.flags = (m.known & EPPROF_MEASURE_FLOPS) ? EPPROF_COUNTER_VALUE_VALID : EPPROF_COUNTER_VALUE_NO_INPUT;
        break;
      case Source::HostBytes:
        v.value = (m.known & EPPROF_MEASURE_BYTES) ? m.bytes : 0.0;
        v.flags = (m.known & EPPROF_MEASURE_BYTES) ? EPPROF_COUNTER_VALUE_VALID : EPPROF_COUNTER_VALUE_NO_INPUT;
        break;
      case Source::Ratio:
        break;  // below, once its inputs are known
    }
  }
  for (size_t i = 0; i < plan.counters.size(); ++i) {
    const CounterDef& def = *plan.counters[i];
    if (def.source != Source::Ratio) continue;
    epprof_counter_value& v = values[i];
    const int ni = plan.numerator_index[i];
    const int di = plan.denominator_index[i];
    const epprof_counter_value* num = ni >= 0 ? &values[ni] : nullptr;
    const epprof_counter_value* den = di >= 0 ? &values[di] : nullptr;
    if (num && (num->flags & EPPROF_COUNTER_VALUE_NOT_IN_PASS)) {
      v.flags = EPPROF_COUNTER_VALUE_NOT_IN_PASS;
      continue;
    }
    if (!num || !den || !(num->flags & EPPROF_COUNTER_VALUE_VALID) || !(den->flags & EPPROF_COUNTER_VALUE_VALID) ||
        den->value == 0.0) {
      v.flags = EPPROF_COUNTER_VALUE_NO_INPUT;
      continue;
    }
    v.value = num->value / den->value * def.scale;
    v.time_enabled_ns = num->time_enabled_ns;
    v.time_running_ns = num->time_running_ns;
    v.flags = EPPROF_COUNTER_VALUE_VALID | ((num->flags | den->flags) & EPPROF_COUNTER_VALUE_SCALED);
  }
  return nullptr;
}

}  // extern "C"
