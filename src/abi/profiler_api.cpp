// C entry points for profilers, including the hot path, and the
// process-wide services (interning, ids, clock, thread names).
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "base/c_enum.h"
#include "base/status.h"
#include "core/args.h"
#include "core/handle_table.h"
#include "core/ids.h"
#include "core/intern.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "epprof/profiler.h"
#include "io/atomic_file.h"
#include "plugin/plugin.h"
#include "scope/annotations.h"
#include "scope/write_trace.h"
#include "tracedb/schema.h"

namespace epprof::abi {

using base::make_status;
using base::null_argument;
using base::out_of_memory_status;
using base::status_from;
namespace {

using core::kMaxProfilers;
using core::Profiler;

// While a profiler runs, its slot's hot word holds kHotRunning, which EP
// profiler calls it needs and kHotTsc (core/profiler.h). Every event reads
// this word, beside the handle in one cache line, instead of the Profiler.
struct ProfilerHot {
  std::atomic<uint32_t> hot{0};
};
using core::kHotRunning;

uint32_t hot_flags(const Profiler& p) {
  return kHotRunning | (p.eps_want_events() ? core::kHotStartEvents : 0) |
         (p.eps_want_stop() ? core::kHotStopEvents : 0) | (core::ticks_are_tsc() ? core::kHotTsc : 0);
}

// Every profiler. The table's lock guards create and destroy, the control
// paths and thread registration; events take no lock.
using ProfilerTable = core::HandleTable<Profiler, kMaxProfilers, ProfilerHot, 32>;
static_assert(sizeof(ProfilerTable::Slot) == 32, "an event reads one slot: handle, profiler, hot word");
ProfilerTable g_profilers;

// Reads a config's trace filter into *out; a filter with nothing set stays
// nullptr (no filter).
epprof_status* trace_filter(const char* fn, const epprof_trace_filter& in,
                            std::shared_ptr<const core::TraceFilterSettings>* out) {
  constexpr size_t kMinSize = offsetof(epprof_trace_filter, kernel_name_regex) + sizeof(const char*);
  if (in.size < kMinSize)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": filter->size (" + std::to_string(in.size) +
                                                    ") is too small; set it to sizeof(epprof_trace_filter)");
  epprof_trace_filter f{};
  std::memcpy(&f, &in, std::min(in.size, sizeof f));
  if (const uint32_t unknown = f.categories & ~((1u << EPPROF_CATEGORY_COUNT_) - 1))
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": filter->categories has bit " +
                                                    std::to_string(__builtin_ctz(unknown)) + " set, which is no " +
                                                    "epprof_category (there are " +
                                                    std::to_string(EPPROF_CATEGORY_COUNT_) + ")");
  auto settings = std::make_shared<core::TraceFilterSettings>();
  settings->categories = f.categories;
  if (const core::FilterError e = core::build_name_filter(core::name_filter_lists(f), &settings->names))
    return make_status(e.code, std::string(fn) + ": filter->" + e.message);
  if (settings->categories != 0 || !settings->names.empty()) *out = std::move(settings);
  return nullptr;
}

[[gnu::cold, gnu::noinline]] epprof_status* not_found(const char* fn) noexcept {
  return status_from(EPPROF_NOT_FOUND,
                     [&] { return std::string(fn) + ": unknown or destroyed profiler handle"; });
}

// Control-path lookup (takes no lock; the caller holds the table's lock
// when the profiler could be destroyed concurrently).
Profiler* find(epprof_profiler_t p) { return g_profilers.find(p.handle); }

// The same, with the table locked for the lookup only: for start and stop,
// which race a destroy of the same handle on another thread in any case.
Profiler* find_locked(epprof_profiler_t p) {
  const auto lock = g_profilers.lock();
  return find(p);
}

// The calling thread's stream in the profiler behind `handle`, and the
// slot's hot flags: the fast path, a cache hit on a running profiler.
// nullptr means "take the slow path" (first event of this thread, stale
// handle, or not running).
[[gnu::always_inline]] inline core::ThreadStream* fast_stream(uint64_t handle, Profiler** prof,
                                                             uint32_t* hot) noexcept {
  const uint32_t idx = uint32_t(handle & (kMaxProfilers - 1));
  const auto& slot = g_profilers.slot(idx);
  if (__builtin_expect(slot.handle.load(std::memory_order_acquire) != handle, 0)) return nullptr;
  *hot = slot.extra.hot.load(std::memory_order_acquire);
  if (__builtin_expect(!(*hot & kHotRunning), 0)) return nullptr;
  *prof = slot.object.load(std::memory_order_relaxed);
  if (__builtin_expect(core::t_last.handle == handle, 1)) return core::t_last.stream;
  const core::ThreadCache* tc = core::t_cache;
  if (__builtin_expect(!tc || tc->entries[idx].handle != handle, 0)) return nullptr;
  core::t_last = core::LastStream{handle, tc->entries[idx].stream};
  return core::t_last.stream;
}

// The stream for the entry points' fast path: fast_stream's, when the
// profiler also runs with TSC ticks and wants none of the EP callbacks in
// `unwanted`. Else nullptr: take event_begin or event_end, which handle
// every case.
[[gnu::always_inline]] inline core::ThreadStream* fast_path_stream(uint64_t handle, uint32_t unwanted) noexcept {
  Profiler* p = nullptr;
  uint32_t hot = 0;
  core::ThreadStream* s = fast_stream(handle, &p, &hot);
  return __builtin_expect(s && (hot & (core::kHotTsc | unwanted)) == core::kHotTsc, 1) ? s : nullptr;
}

// The slow path: registers the thread, or explains why there is no stream.
[[gnu::cold, gnu::noinline]] core::ThreadStream* slow_stream(uint64_t handle, Profiler** prof,
                                                             uint32_t* hot, epprof_status** err,
                                                             const char* fn) noexcept {
  const uint32_t idx = uint32_t(handle & (kMaxProfilers - 1));
  const auto& slot = g_profilers.slot(idx);
  try {
    const auto lock = g_profilers.lock();
    if (slot.handle.load(std::memory_order_relaxed) != handle) {
      *err = not_found(fn);
      return nullptr;
    }
    Profiler* pr = slot.object.load(std::memory_order_relaxed);
    if (pr->state() != Profiler::State::kRunning) {
      *err = make_status(EPPROF_FAILED_PRECONDITION,
                         std::string(fn) + ": the profiler is " +
                             (pr->state() == Profiler::State::kCreated ? "not started yet"
                                                                      : "already stopped"));
      return nullptr;
    }
    core::ThreadCache& tc = core::thread_cache();
    core::ThreadCache::Entry& e = tc.entries[idx];
    if (e.handle != handle) {
      e.stream = pr->add_thread(tc.tid);
      e.handle = handle;
    }
    *prof = pr;
    *hot = hot_flags(*pr);
    return e.stream;
  } catch (...) {
    *err = out_of_memory_status();
    return nullptr;
  }
}

// The calling thread's stream in the profiler behind `handle`, with the
// profiler and its hot flags: fast_stream's, else slow_stream's. nullptr
// with *err set when there is none.
[[gnu::always_inline]] inline core::ThreadStream* stream_for(uint64_t handle, Profiler** prof, uint32_t* hot,
                                                            epprof_status** err, const char* fn) noexcept {
  core::ThreadStream* s = fast_stream(handle, prof, hot);
  return __builtin_expect(s != nullptr, 1) ? s : slow_stream(handle, prof, hot, err, fn);
}

// Host events: every category but MEMORY, which only plugins' events have
// (a host reports memory with epprof_memory_alloc / _free).
bool valid_category(epprof_category c) { return base::c_enum_value(c) < EPPROF_CATEGORY_MEMORY; }

[[gnu::cold]] epprof_status* open_blocks_status(const char* fn, uint32_t open) noexcept {
  return status_from(EPPROF_FAILED_PRECONDITION, [&] {
    return std::string(fn) + ": " + std::to_string(open) + " event block" + (open == 1 ? " is" : "s are") +
           " open; close them first (epprof_event_block_close)";
  });
}

[[gnu::cold, gnu::noinline]] epprof_status* check_event_ids(const char* fn,
                                                            epprof_category category,
                                                            epprof_name_id name,
                                                            uint64_t correlation_id) noexcept {
  if (!valid_category(category))
    return status_from(EPPROF_INVALID_ARGUMENT, [&] {
      if (category == EPPROF_CATEGORY_MEMORY)
        return std::string(fn) + ": EPPROF_CATEGORY_MEMORY is for plugins' events; a host reports memory with "
                                 "epprof_memory_alloc and epprof_memory_free";
      return std::string(fn) + ": unknown category " + std::to_string(int32_t(base::c_enum_value(category)));
    });
  if (!core::is_interned(name))
    return status_from(EPPROF_INVALID_ARGUMENT, [&] {
      return std::string(fn) + ": name " + std::to_string(name) +
             " is not an id returned by epprof_intern";
    });
  if (correlation_id == 0)
    return status_from(EPPROF_INVALID_ARGUMENT, [&] {
      return std::string(fn) + ": correlation id 0; use epprof_correlation_id_next()";
    });
  return nullptr;
}

}  // namespace

[[gnu::noinline]] epprof_status* event_begin(uint64_t handle, epprof_category category,
                                             epprof_name_id name, uint64_t correlation_id) noexcept {
  if (__builtin_expect(!valid_category(category) || name == 0 || correlation_id == 0, 0))
    return check_event_ids("epprof_event_begin", category, name, correlation_id);
  Profiler* p = nullptr;
  uint32_t hot = 0;
  epprof_status* err = nullptr;
  core::ThreadStream* s = stream_for(handle, &p, &hot, &err, "epprof_event_begin");
  if (!s) return err;
  return p->begin(*s, uint8_t(category), name, correlation_id, hot);
}

[[gnu::noinline]] epprof_status* event_end(uint64_t handle, uint64_t correlation_id,
                                           const epprof_arg* args, size_t num_args) noexcept {
  Profiler* p = nullptr;
  uint32_t hot = 0;
  epprof_status* err = nullptr;
  core::ThreadStream* s = stream_for(handle, &p, &hot, &err, "epprof_event_end");
  if (!s) return err;
  return p->end(*s, correlation_id, args, num_args, hot);
}

}  // namespace epprof::abi

using epprof::base::make_status;
using epprof::base::null_argument;

extern "C" {

EPPROF_API const char* epprof_version(void) { return EPPROF_VERSION_STRING; }

EPPROF_API const char* epprof_category_name(epprof_category category) {
  static const char* const kNames[] = {"session", "node", "kernel", "api", "memcpy", "counter", "memory"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == EPPROF_CATEGORY_COUNT_, "one name per epprof_category");
  const uint32_t c = epprof::base::c_enum_value(category);
  return c < EPPROF_CATEGORY_COUNT_ ? kNames[c] : nullptr;
}

EPPROF_API epprof_status* epprof_intern(const char* str, epprof_name_id* out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  if (!str) return null_argument(fn, "str");
  epprof_name_id id = epprof::core::intern(str);
  if (!id)
    return make_status(EPPROF_RESOURCE_EXHAUSTED, std::string(fn) + ": the string table is full");
  *out = id;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_intern_n(const char* str, size_t len, epprof_name_id* out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  if (!str && len) return null_argument(fn, "str");
  epprof_name_id id = epprof::core::intern(std::string_view(str ? str : "", len));
  if (!id)
    return make_status(EPPROF_RESOURCE_EXHAUSTED, std::string(fn) + ": the string table is full");
  *out = id;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_arg_set_intern(const epprof_arg* args, size_t num_args, epprof_arg_set_id* out) {
  if (!out) return null_argument("epprof_arg_set_intern", "out");
  return epprof::core::intern_arg_set("epprof_arg_set_intern", args, num_args, nullptr, out);
}

EPPROF_API epprof_status* epprof_node_args_intern(const epprof_node_desc* node, const epprof_arg* args,
                                                  size_t num_args, epprof_arg_set_id* out) {
  static const char* fn = "epprof_node_args_intern";
  if (!node) return null_argument(fn, "node");
  if (!out) return null_argument(fn, "out");
  constexpr size_t kFirstSize = offsetof(epprof_node_desc, ep) + sizeof(epprof_name_id);
  if (node->size < kFirstSize)
    return epprof::base::status_from(EPPROF_INVALID_ARGUMENT, [&] {
      return std::string(fn) + ": node->size is " + std::to_string(node->size) + ", below the " +
             std::to_string(kFirstSize) + " bytes of epprof_node_desc's first version";
    });
  for (auto [field, id] :
       {std::pair{"name", node->name}, std::pair{"op_type", node->op_type}, std::pair{"ep", node->ep}})
    if ((id || std::string_view(field) != "ep") && !epprof::core::interned(id))
      return epprof::base::status_from(EPPROF_INVALID_ARGUMENT, [&, field = field, id = id] {
        return std::string(fn) + ": node->" + field + " (" + std::to_string(id) + ") is not an interned name";
      });
  const epprof::core::NodeIdentity identity{node->name, node->op_type, node->index, node->ep};
  return epprof::core::intern_arg_set(fn, args, num_args, &identity, out);
}

EPPROF_API const char* epprof_name(epprof_name_id id) {
  const std::string* s = epprof::core::interned(id);
  return s ? s->c_str() : nullptr;
}

EPPROF_API uint64_t epprof_correlation_id_next(void) {
  return epprof::core::next_correlation_id();
}

EPPROF_API uint64_t epprof_correlation_id_block(uint64_t count) {
  return epprof::core::reserve_correlation_ids(count);
}

EPPROF_API int64_t epprof_clock_now_ns(void) { return epprof::core::monotonic_ns(); }

EPPROF_API void epprof_remove_temporary_files(void) { epprof::io::remove_temporaries_at_exit(); }

EPPROF_API epprof_status* epprof_set_thread_name(const char* name) {
  EPPROF_API_BEGIN
  if (!name) return null_argument(fn, "name");
  epprof::core::set_thread_name(epprof::core::thread_cache().tid, name);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_profiler_create(const epprof_profiler_config* config,
                                                 epprof_profiler_t* out) {
  EPPROF_API_BEGIN
  using namespace epprof;
  if (!out) return null_argument(fn, "out");
  if (!config) return null_argument(fn, "config");
  // Read only what the caller's size covers; fields past it keep defaults.
  epprof_profiler_config c{};
  if (config->size < offsetof(epprof_profiler_config, trace_path) + sizeof(const char*))
    return make_status(EPPROF_INVALID_ARGUMENT,
                       std::string(fn) + ": config->size (" + std::to_string(config->size) +
                           ") is too small; set it to sizeof(epprof_profiler_config)");
  std::memcpy(&c, config, std::min(config->size, sizeof c));
  if (!c.trace_path || !*c.trace_path)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": trace_path is required");
  if (c.timestamp_format > EPPROF_TIMESTAMPS_INTEGER_US)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": unknown timestamp_format " +
                                                    std::to_string(c.timestamp_format));
  if (c.trace_format > EPPROF_TRACE_FORMAT_SQLITE)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": unknown trace_format " +
                                                    std::to_string(c.trace_format));
  core::ScopeConfig pc;
  pc.trace_path = c.trace_path;
  pc.sqlite = c.trace_format == EPPROF_TRACE_FORMAT_SQLITE ||
              (c.trace_format == EPPROF_TRACE_FORMAT_AUTO && tracedb::is_database_path(pc.trace_path));
  if (c.scope_name && *c.scope_name) pc.scope_name = c.scope_name;
  if (c.memory_budget_bytes) pc.memory_budget_bytes = std::max<uint64_t>(c.memory_budget_bytes, 1 << 20);
  if (c.disk_budget_bytes) pc.disk_budget_bytes = c.disk_budget_bytes;
  if (c.spill_directory) pc.spill_dir = c.spill_directory;
  pc.integer_timestamps = c.timestamp_format == EPPROF_TIMESTAMPS_INTEGER_US;
  if (c.filter)
    if (epprof_status* st = abi::trace_filter(fn, *c.filter, &pc.filter)) return st;

  std::unique_ptr<core::Profiler> prof;
  try {
    prof = std::make_unique<core::Profiler>(std::move(pc));
  } catch (const std::runtime_error& e) {
    return make_status(EPPROF_IO_ERROR, std::string(fn) + ": " + e.what());
  }
  core::Profiler* raw = prof.get();
  const uint64_t h = abi::g_profilers.insert(raw, [&](uint64_t handle) { raw->set_handle(handle); });
  if (h == 0)
    return make_status(EPPROF_RESOURCE_EXHAUSTED,
                       std::string(fn) + ": " + std::to_string(core::kMaxProfilers) +
                           " profilers exist; destroy one first");
  prof.release();
  out->handle = h;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_profiler_add_plugin(epprof_profiler_t profiler,
                                                     epprof_plugin_t plugin) {
  EPPROF_API_BEGIN
  using namespace epprof;
  const auto lock = abi::g_profilers.lock();
  core::Profiler* p = abi::find(profiler);
  if (!p) return abi::not_found(fn);
  if (p->state() != core::Profiler::State::kCreated)
    return make_status(EPPROF_FAILED_PRECONDITION,
                       std::string(fn) + ": plugins must be added before the profiler starts");
  auto loaded = plugin::plugin_table_get(plugin.handle);
  if (!loaded)
    return make_status(EPPROF_NOT_FOUND, std::string(fn) + ": unknown or unloaded plugin handle");
  try {
    p->add_ep(std::make_unique<plugin::EpInstance>(std::move(loaded), uint32_t(p->eps().size())));
  } catch (const std::runtime_error& e) {
    return make_status(EPPROF_PLUGIN_ERROR, std::string(fn) + ": " + e.what());
  }
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_profiler_set_metadata(epprof_profiler_t profiler, const char* key,
                                                       const char* value) {
  EPPROF_API_BEGIN
  using namespace epprof;
  if (!key || !value) return null_argument(fn, "key or value");
  const auto lock = abi::g_profilers.lock();
  core::Profiler* p = abi::find(profiler);
  if (!p) return abi::not_found(fn);
  p->set_metadata(key, value);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_profiler_start(epprof_profiler_t profiler) {
  EPPROF_API_BEGIN
  using namespace epprof;
  core::Profiler* p = abi::find_locked(profiler);
  if (!p) return abi::not_found(fn);
  if (p->state() != core::Profiler::State::kCreated)
    return make_status(EPPROF_FAILED_PRECONDITION,
                       std::string(fn) + ": the profiler was already started");
  p->start();
  abi::g_profilers.slot_of(profiler.handle).extra.hot.store(abi::hot_flags(*p), std::memory_order_release);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_profiler_stop(epprof_profiler_t profiler,
                                               epprof_trace_stats* stats) {
  EPPROF_API_BEGIN
  using namespace epprof;
  core::Profiler* p = abi::find_locked(profiler);
  if (!p) return abi::not_found(fn);
  if (p->state() != core::Profiler::State::kRunning)
    return make_status(EPPROF_FAILED_PRECONDITION, std::string(fn) + ": the profiler is " +
                                                       (p->state() == core::Profiler::State::kCreated
                                                            ? "not started"
                                                            : "already stopped"));
  if (const uint32_t open = p->open_blocks())
    return abi::open_blocks_status(fn, open);
  abi::g_profilers.slot_of(profiler.handle).extra.hot.store(0, std::memory_order_release);
  p->stop();
  std::string error = scope::write_trace(*p, stats);
  if (!error.empty()) return make_status(EPPROF_IO_ERROR, std::string(fn) + ": " + error);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_profiler_destroy(epprof_profiler_t profiler) {
  EPPROF_API_BEGIN
  using namespace epprof;
  std::unique_ptr<core::Profiler> doomed;
  {
    const auto lock = abi::g_profilers.lock();
    core::Profiler* p = abi::find(profiler);
    if (!p) return abi::not_found(fn);
    if (const uint32_t open = p->open_blocks()) return abi::open_blocks_status(fn, open);
    abi::g_profilers.slot_of(profiler.handle).extra.hot.store(0, std::memory_order_release);
    doomed.reset(abi::g_profilers.remove_locked(profiler.handle));
  }
  (void)scope::take_annotations(&doomed->recording());  // never written: drop them
  return nullptr;  // `doomed` releases EP instances outside the lock
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_event_annotate(epprof_profiler_t profiler, uint64_t correlation_id,
                                                const epprof_arg* args, size_t num_args) {
  EPPROF_API_BEGIN
  using namespace epprof;
  if (correlation_id == 0) return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": correlation id 0");
  if (num_args && !args) return null_argument(fn, "args");
  if (num_args > 32)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": " + std::to_string(num_args) + " args; at most 32");
  std::vector<exporter::ExtraArg> notes;
  if (epprof_status* st = scope::annotation_args(fn, args, num_args, &notes)) return st;
  const auto lock = abi::g_profilers.lock();
  core::Profiler* p = abi::find(profiler);
  if (!p) return abi::not_found(fn);
  scope::annotate(&p->recording(), correlation_id, std::move(notes));
  return nullptr;
  EPPROF_API_END
}

// The event entry points test for the disabled (zero) handle first, so a
// host with profiling off pays one compare. Then they try the fast path
// (Profiler::try_begin / try_end), a few straight lines of code, and fall
// back to event_begin / event_end for everything else. They are `hot`: the
// linker places them side by side, so an event after a cache-evicting
// kernel fetches few lines of code.
EPPROF_API __attribute__((hot)) epprof_status* epprof_event_begin(epprof_profiler_t profiler, epprof_category category,
                                             epprof_name_id name, uint64_t correlation_id) {
  if (profiler.handle == 0) return nullptr;
  using namespace epprof;
  if (core::ThreadStream* s = abi::fast_path_stream(profiler.handle, core::kHotStartEvents);
      __builtin_expect(s && abi::valid_category(category) && name != 0 && correlation_id != 0, 1) &&
      core::Profiler::try_begin(*s, uint8_t(category), name, correlation_id))
    return nullptr;
  return abi::event_begin(profiler.handle, category, name, correlation_id);
}

EPPROF_API __attribute__((hot)) epprof_status* epprof_event_end(epprof_profiler_t profiler, uint64_t correlation_id,
                                           const epprof_arg* args, size_t num_args) {
  if (profiler.handle == 0) return nullptr;
  using namespace epprof;
  if (core::ThreadStream* s = abi::fast_path_stream(profiler.handle, core::kHotStopEvents);
      __builtin_expect(s != nullptr, 1) && core::Profiler::try_end(*s, correlation_id, args, num_args))
    return nullptr;
  return abi::event_end(profiler.handle, correlation_id, args, num_args);
}

EPPROF_API epprof_status* epprof_event_record(epprof_profiler_t profiler, epprof_category category,
                                              epprof_name_id name, uint64_t correlation_id,
                                              int64_t start_ns, int64_t dur_ns,
                                              const epprof_arg* args, size_t num_args) {
  if (profiler.handle == 0) return nullptr;
  using namespace epprof;
  const char* fn = "epprof_event_record";
  if (epprof_status* st = abi::check_event_ids(fn, category, name, correlation_id)) return st;
  if (dur_ns < 0)
    return base::status_from(EPPROF_INVALID_ARGUMENT, [&] {
      return std::string(fn) + ": negative duration " + std::to_string(dur_ns);
    });
  core::Profiler* p = nullptr;
  uint32_t hot = 0;
  epprof_status* err = nullptr;
  core::ThreadStream* s = abi::stream_for(profiler.handle, &p, &hot, &err, fn);
  if (!s) return err;
  return p->record(*s, uint8_t(category), name, correlation_id, start_ns, dur_ns, args, num_args);
}

}  // extern "C"

namespace epprof::abi {
namespace {

[[gnu::cold, gnu::noinline]] epprof_status* bad_memory_args(const char* fn, uint64_t bytes, epprof_name_id device,
                                                            uint32_t tag, bool alloc) noexcept {
  return status_from(EPPROF_INVALID_ARGUMENT, [&] {
    if (alloc && bytes == 0) return std::string(fn) + ": bytes is 0";
    if (alloc && tag >= EPPROF_MEMORY_TAG_COUNT_) return std::string(fn) + ": unknown tag " + std::to_string(tag);
    return std::string(fn) + ": device " + std::to_string(device) + " is not an interned name (epprof_intern)";
  });
}

epprof_status* memory_event(epprof_profiler_t profiler, uint8_t kind, uint64_t allocation_id, uint64_t bytes,
                            epprof_name_id device, uint32_t tag, const char* fn) noexcept {
  const bool alloc = kind == core::kRecordMemoryAlloc;
  if (__builtin_expect(!core::is_interned(device) || (alloc && (bytes == 0 || tag >= EPPROF_MEMORY_TAG_COUNT_)), 0))
    return bad_memory_args(fn, bytes, device, tag, alloc);
  core::Profiler* p = nullptr;
  uint32_t hot = 0;
  epprof_status* err = nullptr;
  core::ThreadStream* s = stream_for(profiler.handle, &p, &hot, &err, fn);
  if (!s) return err;
  p->memory(*s, kind, allocation_id, bytes, device, uint8_t(tag), hot);
  return nullptr;
}

}  // namespace
}  // namespace epprof::abi

extern "C" {

EPPROF_API __attribute__((hot)) epprof_status* epprof_memory_alloc(epprof_profiler_t profiler,
                                                                   uint64_t allocation_id, uint64_t bytes,
                                                                   epprof_name_id device, epprof_memory_tag tag) {
  if (profiler.handle == 0) return nullptr;
  using namespace epprof;
  if (core::ThreadStream* s = abi::fast_path_stream(profiler.handle, 0);
      __builtin_expect(s && bytes != 0 && base::c_enum_value(tag) < EPPROF_MEMORY_TAG_COUNT_ &&
                           core::is_interned(device),
                       1) &&
      core::Profiler::try_memory(*s, core::kRecordMemoryAlloc, allocation_id, bytes, device,
                                 uint8_t(base::c_enum_value(tag))))
    return nullptr;
  return epprof::abi::memory_event(profiler, epprof::core::kRecordMemoryAlloc, allocation_id, bytes, device,
                                   base::c_enum_value(tag), "epprof_memory_alloc");
}

EPPROF_API __attribute__((hot)) epprof_status* epprof_memory_free(epprof_profiler_t profiler,
                                                                  uint64_t allocation_id, epprof_name_id device) {
  if (profiler.handle == 0) return nullptr;
  using namespace epprof;
  if (core::ThreadStream* s = abi::fast_path_stream(profiler.handle, 0);
      __builtin_expect(s && core::is_interned(device), 1) &&
      core::Profiler::try_memory(*s, core::kRecordMemoryFree, allocation_id, 0, device, 0))
    return nullptr;
  return epprof::abi::memory_event(profiler, epprof::core::kRecordMemoryFree, allocation_id, 0, device, 0,
                                   "epprof_memory_free");
}

}  // extern "C"

// ---- Event blocks ----

namespace epprof::abi {
namespace {

using core::BlockState;
static_assert(sizeof(BlockState) <= sizeof(epprof_event_block), "a block's state fits the host's struct");
static_assert(alignof(BlockState) <= alignof(epprof_event_block), "and its alignment");

BlockState& block_state(epprof_event_block* block) { return *reinterpret_cast<BlockState*>(block); }

[[gnu::cold, gnu::noinline]] epprof_status* block_misuse(const char* fn, const epprof_event_block* block,
                                                         size_t index) noexcept {
  if (!block) return null_argument(fn, "block");
  const BlockState& b = *reinterpret_cast<const BlockState*>(block);
  return status_from(EPPROF_INVALID_ARGUMENT, [&] {
    const std::string f(fn);
    if (b.state != BlockState::kOpen) return f + ": the block is not open";
    if (index >= b.count)
      return f + ": index " + std::to_string(index) + " is past the block's " + std::to_string(b.count) + " events";
    if (b.begun == BlockState::kNone) return f + ": event " + std::to_string(index) + " was not begun";
    return f + ": event " + std::to_string(b.begun) + " of the block is begun and not ended" +
           (index == b.begun ? "" : " (index " + std::to_string(index) + " given)");
  });
}

}  // namespace
}  // namespace epprof::abi

extern "C" {

EPPROF_API epprof_status* epprof_event_block_open(epprof_profiler_t profiler, epprof_category category,
                                                  uint64_t first_correlation_id, size_t count,
                                                  const epprof_event_desc* descs, epprof_event_block* block) {
  using namespace epprof;
  const char* fn = "epprof_event_block_open";
  if (!block) return null_argument(fn, "block");
  if (!descs) return null_argument(fn, "descs");
  core::BlockState& b = abi::block_state(block);
  if (b.state == core::BlockState::kOpen)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": the block is open already; close it first");
  b.state = 0;  // not open until everything checks
  if (count == 0 || count >= core::BlockState::kNone)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": count " + std::to_string(count) +
                                                    " is not between 1 and 2^32 - 2");
  if (!abi::valid_category(category))
    return base::status_from(EPPROF_INVALID_ARGUMENT,
                            [&] {
                              return std::string(fn) + ": unknown category " +
                                     std::to_string(int32_t(base::c_enum_value(category)));
                            });
  if (first_correlation_id == 0 || first_correlation_id - 1 > UINT64_MAX - count)
    return base::status_from(EPPROF_INVALID_ARGUMENT, [&] {
      return std::string(fn) + ": " + std::to_string(count) + " correlation ids from " +
             std::to_string(first_correlation_id) + " are not a block of ids (use epprof_correlation_id_block)";
    });
  if (profiler.handle == 0) {
    b.state = core::BlockState::kDisabled;
    return nullptr;
  }
  core::Profiler* p = nullptr;
  uint32_t hot = 0;
  epprof_status* err = nullptr;
  core::ThreadStream* s = abi::stream_for(profiler.handle, &p, &hot, &err, fn);
  if (!s) return err;
  if (hot & (core::kHotStartEvents | core::kHotStopEvents))
    return make_status(EPPROF_FAILED_PRECONDITION,
                       std::string(fn) + ": an EP profiler of this profiler wants start_event / stop_event for "
                                         "each event; record them with epprof_event_begin / epprof_event_end");
  return p->open_block(*s, b, uint8_t(category), first_correlation_id, uint32_t(count), descs);
}

EPPROF_API __attribute__((hot)) epprof_status* epprof_event_block_begin(epprof_event_block* block, size_t index) {
  using epprof::core::BlockState;
  if (__builtin_expect(block != nullptr, 1)) {
    BlockState& b = epprof::abi::block_state(block);
    if (__builtin_expect(b.state == BlockState::kOpen && index < b.count && b.begun == BlockState::kNone, 1)) {
      epprof::core::Profiler::block_begin(b, uint32_t(index));
      return nullptr;
    }
    if (b.state == BlockState::kDisabled) return nullptr;
  }
  return epprof::abi::block_misuse("epprof_event_block_begin", block, index);
}

EPPROF_API __attribute__((hot)) epprof_status* epprof_event_block_end(epprof_event_block* block, size_t index) {
  using epprof::core::BlockState;
  if (__builtin_expect(block != nullptr, 1)) {
    BlockState& b = epprof::abi::block_state(block);
    if (__builtin_expect(b.state == BlockState::kOpen && index == b.begun, 1)) {
      epprof::core::Profiler::block_end(b);
      return nullptr;
    }
    if (b.state == BlockState::kDisabled) return nullptr;
  }
  return epprof::abi::block_misuse("epprof_event_block_end", block, index);
}

EPPROF_API epprof_status* epprof_event_block_end_with_args(epprof_event_block* block, size_t index,
                                                           const epprof_arg* args, size_t num_args) {
  using epprof::core::BlockState;
  const char* fn = "epprof_event_block_end_with_args";
  if (!block) return epprof::abi::block_misuse(fn, block, index);
  BlockState& b = epprof::abi::block_state(block);
  if (b.state == BlockState::kDisabled) return nullptr;
  if (b.state != BlockState::kOpen || index != b.begun) return epprof::abi::block_misuse(fn, block, index);
  return b.profiler->block_end_with_args(b, args, num_args);
}

EPPROF_API epprof_status* epprof_event_block_close(epprof_event_block* block) {
  using epprof::core::BlockState;
  const char* fn = "epprof_event_block_close";
  if (!block) return epprof::abi::block_misuse(fn, block, 0);
  BlockState& b = epprof::abi::block_state(block);
  if (b.state == BlockState::kDisabled) {
    b.state = 0;
    return nullptr;
  }
  if (b.state != BlockState::kOpen) return epprof::abi::block_misuse(fn, block, 0);
  const uint32_t begun = b.begun;
  b.state = 0;
  b.profiler->close_block();
  if (begun != BlockState::kNone)
    return make_status(EPPROF_FAILED_PRECONDITION, std::string(fn) + ": event " + std::to_string(begun) +
                                                       " (correlation id " + std::to_string(b.first_id + begun) +
                                                       ") was begun and not ended; it is not recorded");
  return nullptr;
}

}  // extern "C"
