// C entry points of epprof/session.h and epprof/host.h: the session registry, the producer
// fan-out, and the host side of the dispatch counting service.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "base/status.h"
#include "core/handle_table.h"
#include "core/intern.h"
#include "epprof/host.h"
#include "epprof/session.h"
#include "scope/write_trace.h"
#include "session/session.h"

namespace epprof::session {
namespace {

constexpr uint32_t kMaxSessions = 64;
constexpr uint64_t kDefaultBufferBytes = 4ull << 20;
constexpr uint64_t kMinRecords = 64;

// Producers pin a slot (its users count) and then check its active bit;
// stop clears the bit and waits for users to leave: both sides are
// seq_cst, so one of them sees the other.
struct SessionSlot {
  std::shared_ptr<Session> owner;  // under the table's lock
  alignas(64) std::atomic<uint32_t> users{0};
};
// Every session. The table's lock guards create, start, stop and destroy.
using SessionTable = core::HandleTable<Session, kMaxSessions, SessionSlot, 64>;
SessionTable g_sessions;
std::atomic<uint64_t> g_active_mask{0};
alignas(64) uint32_t g_active_count = 0;  // read through epprof_session_active_word

uint32_t slot_of(uint64_t handle) { return SessionTable::index(handle); }

// A session that is active (producers) or just valid (control paths).
class Pin {
 public:
  Pin(uint32_t i, uint64_t expect_handle) : slot_(&g_sessions.slot(i)) {
    slot_->extra.users.fetch_add(1, std::memory_order_seq_cst);
    const bool active = (g_active_mask.load(std::memory_order_seq_cst) >> i) & 1u;
    if (active && (expect_handle == 0 || slot_->handle.load(std::memory_order_acquire) == expect_handle))
      session_ = slot_->object.load(std::memory_order_acquire);
  }
  ~Pin() { slot_->extra.users.fetch_sub(1, std::memory_order_release); }
  Pin(const Pin&) = delete;
  Pin& operator=(const Pin&) = delete;
  Session* get() const { return session_; }

 private:
  SessionTable::Slot* slot_;
  Session* session_ = nullptr;
};

[[gnu::cold]] epprof_status* not_found(const char* fn) {
  return base::make_status(EPPROF_NOT_FOUND, std::string(fn) + ": unknown or destroyed session handle");
}

std::shared_ptr<Session> find_locked(epprof_session_t s) {
  return g_sessions.find(s.handle) ? g_sessions.slot_of(s.handle).extra.owner : nullptr;
}

std::shared_ptr<Session> find(epprof_session_t s) {
  const auto lock = g_sessions.lock();
  return find_locked(s);
}

// ACTIVE → STOPPED under the table's lock; the caller then waits for producers.
void deactivate_locked(Session& s) {
  const uint32_t i = slot_of(s.handle());
  g_active_mask.fetch_and(~(uint64_t(1) << i), std::memory_order_seq_cst);
  __atomic_fetch_sub(&g_active_count, 1u, __ATOMIC_SEQ_CST);
  s.set_state(EPPROF_SESSION_STOPPED);
}

void wait_for_producers(uint64_t handle) {
  const SessionTable::Slot& slot = g_sessions.slot_of(handle);
  while (slot.extra.users.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
}

epprof_status* own_callback(const char* fn) {
  return base::make_status(EPPROF_FAILED_PRECONDITION,
                          std::string(fn) + ": called from the session's own callback, which would wait for itself");
}

// The session behind `session`, or NOT_FOUND for a stale handle.
epprof_status* find(const char* fn, epprof_session_t session, std::shared_ptr<Session>* out) {
  *out = find(session);
  return *out ? nullptr : not_found(fn);
}

// The session behind `session` for opening or ending a pass: NOT_FOUND, or
// FAILED_PRECONDITION unless its replay mode has passes.
epprof_status* find_for_passes(const char* fn, epprof_session_t session, std::shared_ptr<Session>* out) {
  if (epprof_status* st = find(fn, session, out)) return st;
  const auto mode = (*out)->settings().replay;
  if (mode != EPPROF_REPLAY_APPLICATION && mode != EPPROF_REPLAY_USER)
    return base::make_status(EPPROF_FAILED_PRECONDITION,
                             std::string(fn) + ": passes are opened only in APPLICATION or USER replay mode");
  return nullptr;
}

// The session behind `session` for stop, flush or destroy, with the table
// locked by the caller (`locked`) or not: NOT_FOUND for a stale handle,
// FAILED_PRECONDITION from the session's own callback (it would wait for
// itself).
epprof_status* find_for_control(const char* fn, epprof_session_t session, bool locked, std::shared_ptr<Session>* out) {
  *out = locked ? find_locked(session) : find(session);
  if (!*out) return not_found(fn);
  if ((*out)->on_delivery_thread()) return own_callback(fn);
  return nullptr;
}

// Stop and destroy: under the table's lock, finds the session and makes it
// inactive (refusing one that is not active when `must_be_active`), then
// runs `under_lock`; once unlocked, waits for the producers still inside
// an emit and delivers everything buffered. *out: the session.
template <class F>
epprof_status* quiesce(const char* fn, epprof_session_t session, bool must_be_active, F&& under_lock,
                       std::shared_ptr<Session>* out) {
  {
    const auto lock = g_sessions.lock();
    if (epprof_status* st = find_for_control(fn, session, true, out)) return st;
    const bool active = (*out)->state() == EPPROF_SESSION_ACTIVE;
    if (must_be_active && !active)
      return base::make_status(EPPROF_FAILED_PRECONDITION, std::string(fn) + ": the session is not active");
    if (active) deactivate_locked(**out);
    under_lock();
  }
  wait_for_producers(session.handle);
  (*out)->flush();
  return nullptr;
}

// A filter's error as a status of `fn`.
epprof_status* filter_status(const char* fn, const core::FilterError& e) {
  return base::make_status(e.code, std::string(fn) + ": " + e.message);
}

uint64_t round_down_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p <= v / 2) p *= 2;
  return p;
}

// A copy of `in` with interned ids for the names the host gave only as
// strings, and strings for those it gave only as ids.
void normalize(const epprof_dispatch_info& in, epprof_dispatch_info& out) {
  std::memset(&out, 0, sizeof out);
  std::memcpy(&out, &in, std::min(in.size, sizeof out));
  out.size = sizeof out;
  auto fix = [](const char*& s, epprof_name_id& id) {
    if (!id && s && *s) id = core::intern(s);
    if (!s) {
      const std::string* str = id ? core::interned(id) : nullptr;
      s = str ? str->c_str() : "";
    }
  };
  fix(out.node_name, out.node_name_id);
  fix(out.op_type, out.op_type_id);
  fix(out.ep_name, out.ep_name_id);
  fix(out.kernel_name, out.kernel_name_id);
  if (!out.device) out.device = "cpu";
  if (in.size < offsetof(epprof_dispatch_info, node_index) + sizeof(uint32_t))
    out.node_index = EPPROF_RECORD_NO_NODE;
}

template <class F>
void guarded(Session& s, const char* what, F&& call) noexcept {
  try {
    if (epprof_status* st = call()) {
      s.count_callback_error(what, std::string(epprof_status_code_name(epprof_status_get_code(st))) + ": " +
                                       epprof_status_get_message(st));
      epprof_status_release(st);
    }
  } catch (const std::exception& e) {
    s.count_callback_error(what, std::string("threw: ") + e.what());
  } catch (...) {
    s.count_callback_error(what, "threw a non-standard exception");
  }
}

// A host's records, stride records[0].size, checked and seen in this
// library's layout: the caller's array itself when the strides match (no
// copy, no allocation on the hot path), else a copy of its own (a host
// built against a later header). Not shared between calls: a callback may
// emit while its caller still reads the records.
class Records {
 public:
  Records(const epprof_record* records, size_t n) : records_(records), n_(n) {}

  // NULL, or INVALID_ARGUMENT naming the first record with a bad size or
  // an unknown kind. A size past kMaxRecordSize is no record's: an unset
  // or garbage field, which must not become a stride to read by.
  epprof_status* check(const char* fn) {
    static constexpr uint32_t kMaxRecordSize = 4096;
    if (n_ == 0) return nullptr;
    const uint32_t stride = records_[0].size;
    const auto* bytes = reinterpret_cast<const unsigned char*>(records_);
    for (size_t i = 0; i < n_; ++i) {
      epprof_record head;  // size and kind lead every layout
      std::memcpy(&head, bytes + i * stride, offsetof(epprof_record, category));
      if (__builtin_expect(head.size != stride || stride < EPPROF_RECORD_MIN_SIZE || stride > kMaxRecordSize, 0))
        return base::status_from(EPPROF_INVALID_ARGUMENT, [&] {
          return std::string(fn) + ": records[" + std::to_string(i) + "].size is " + std::to_string(head.size) +
                 (i                     ? " but records[0].size is " + std::to_string(stride)
                  : stride > kMaxRecordSize ? ", not a record's size"
                                            : ", below EPPROF_RECORD_MIN_SIZE (" +
                                                  std::to_string(EPPROF_RECORD_MIN_SIZE) + ")") +
                 "; set every record's size to sizeof(epprof_record)";
        });
      if (__builtin_expect(head.kind > EPPROF_RECORD_COUNTER, 0))
        return base::status_from(EPPROF_INVALID_ARGUMENT, [&] {
          return std::string(fn) + ": records[" + std::to_string(i) + "] has unknown kind " +
                 std::to_string(head.kind);
        });
    }
    if (stride != sizeof(epprof_record)) {
      try {
        read_records(records_, stride, n_, &copy_);
      } catch (const std::bad_alloc&) {
        return base::status_from(EPPROF_OUT_OF_MEMORY, [&] {
          return std::string(fn) + ": no memory to convert " + std::to_string(n_) + " records of size " +
                 std::to_string(stride);
        });
      }
      records_ = copy_.data();
    }
    return nullptr;
  }
  const epprof_record* data() const { return records_; }

 private:
  const epprof_record* records_;
  size_t n_;
  std::vector<epprof_record> copy_;
};

}  // namespace
// Sessions receive every profiler scope's device records when it ends.
const scope::DeviceRecordSubscriber kDeviceRecords{
    [] { return epprof_session_any_active() != 0; },
    [](const epprof_record* records, size_t count) {
      if (epprof_status* st = epprof_session_emit(records, count)) epprof_status_release(st);
    }};

}  // namespace epprof::session

using epprof::base::make_status;
using epprof::base::null_argument;
namespace es = epprof::session;

extern "C" {

EPPROF_API epprof_status* epprof_session_create(const epprof_session_config* config, epprof_session_t* out) {
  EPPROF_API_BEGIN
  epprof::scope::subscribe_device_records(&es::kDeviceRecords);
  if (!out) return null_argument(fn, "out");
  if (!config) return null_argument(fn, "config");
  constexpr size_t kMinSize = offsetof(epprof_session_config, trace_path) + sizeof(const char*);
  if (config->size < kMinSize)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": config->size (" + std::to_string(config->size) +
                                                    ") is too small; set it to sizeof(epprof_session_config)");
  constexpr size_t kRecordSizeEnd = offsetof(epprof_session_config, record_size) + sizeof(size_t);
  if (config->size < kRecordSizeEnd)
    return make_status(EPPROF_INVALID_ARGUMENT,
                       std::string(fn) + ": config->size (" + std::to_string(config->size) +
                           ") has no record_size: the tool was built against epprof 0.1's epprof/session.h, "
                           "whose records had another layout; rebuild it against this one");
  epprof_session_config c{};
  std::memcpy(&c, config, std::min(config->size, sizeof c));
  if (c.record_size < EPPROF_RECORD_MIN_SIZE)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": record_size (" + std::to_string(c.record_size) +
                                                    ") is below EPPROF_RECORD_MIN_SIZE (" +
                                                    std::to_string(EPPROF_RECORD_MIN_SIZE) +
                                                    "); set it to sizeof(epprof_record)");
  if (c.replay_mode > EPPROF_REPLAY_USER)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": unknown replay_mode " + std::to_string(c.replay_mode));
  if (c.buffer_policy > EPPROF_BUFFER_DISCARD)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": unknown buffer_policy " + std::to_string(c.buffer_policy));
  if (!c.callback && !(c.trace_path && *c.trace_path))
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": a session needs a callback or a trace_path");
  if (c.counter_record_callback && !c.dispatch_callback)
    return make_status(EPPROF_INVALID_ARGUMENT,
                       std::string(fn) + ": counter_record_callback is set but dispatch_callback is not");

  es::SessionSettings st;
  st.replay = epprof_replay_mode(c.replay_mode);
  st.policy = epprof_buffer_policy(c.buffer_policy);
  const uint64_t bytes = c.buffer_bytes ? c.buffer_bytes : es::kDefaultBufferBytes;
  st.capacity_records = std::max(es::kMinRecords, es::round_down_pow2(bytes / sizeof(epprof_record)));
  const uint64_t capacity_bytes = st.capacity_records * sizeof(epprof_record);
  if (c.watermark_bytes > capacity_bytes)
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": watermark_bytes (" + std::to_string(c.watermark_bytes) +
                                                    ") is above the buffer capacity (" + std::to_string(capacity_bytes) +
                                                    " bytes, " + std::to_string(st.capacity_records) + " records)");
  st.watermark_records = c.watermark_bytes ? (c.watermark_bytes + sizeof(epprof_record) - 1) / sizeof(epprof_record)
                                           : st.capacity_records / 2;
  st.watermark_records = std::min(std::max<uint64_t>(st.watermark_records, 1), st.capacity_records);
  st.callback = c.callback;
  st.callback_user_data = c.callback_user_data;
  if (c.trace_path) st.trace_path = c.trace_path;
  st.dispatch_callback = c.dispatch_callback;
  st.dispatch_user_data = c.dispatch_user_data;
  st.counter_record_callback = c.counter_record_callback;
  st.counter_record_user_data = c.counter_record_user_data;
  st.record_size = c.record_size;

  es::Filters f;
  f.categories = c.categories;
  f.kinds = c.record_kinds;
  f.dispatch_skip = c.dispatch_skip;
  f.dispatch_count = c.dispatch_count;
  namespace ec = epprof::core;
  if (const auto e = ec::build_name_filter(ec::name_filter_lists(c), &f.names)) return es::filter_status(fn, e);
  if (const auto e = ec::intern_names("counter_names", c.counter_names, c.num_counter_names, &f.counter_names))
    return es::filter_status(fn, e);

  std::shared_ptr<es::Session> s;
  try {
    s = std::make_shared<es::Session>(std::move(st), std::move(f));
  } catch (const std::runtime_error& e) {
    return make_status(EPPROF_IO_ERROR, std::string(fn) + ": " + e.what());
  }
  const uint64_t h = es::g_sessions.insert(s.get(), [&](uint64_t handle) {
    s->set_handle(handle);
    es::g_sessions.slot_of(handle).extra.owner = s;
  });
  if (h == 0)
    return make_status(EPPROF_RESOURCE_EXHAUSTED,
                       std::string(fn) + ": " + std::to_string(es::kMaxSessions) + " sessions exist; destroy one first");
  out->handle = h;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_start(epprof_session_t session) {
  EPPROF_API_BEGIN
  const auto lock = es::g_sessions.lock();
  auto s = es::find_locked(session);
  if (!s) return es::not_found(fn);
  if (s->state() == EPPROF_SESSION_ACTIVE)
    return make_status(EPPROF_FAILED_PRECONDITION, std::string(fn) + ": the session is already active");
  s->set_state(EPPROF_SESSION_ACTIVE);
  es::g_active_mask.fetch_or(uint64_t(1) << es::slot_of(session.handle), std::memory_order_seq_cst);
  __atomic_fetch_add(&es::g_active_count, 1u, __ATOMIC_SEQ_CST);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_stop(epprof_session_t session) {
  EPPROF_API_BEGIN
  std::shared_ptr<es::Session> s;
  return es::quiesce(fn, session, true, [] {}, &s);
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_flush(epprof_session_t session) {
  EPPROF_API_BEGIN
  std::shared_ptr<es::Session> s;
  if (epprof_status* st = es::find_for_control(fn, session, false, &s)) return st;
  s->flush();
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_destroy(epprof_session_t session) {
  EPPROF_API_BEGIN
  std::shared_ptr<es::Session> s;
  auto forget = [&] {
    es::g_sessions.slot_of(session.handle).extra.owner.reset();
    es::g_sessions.remove_locked(session.handle);  // new pins find no session
  };
  if (epprof_status* st = es::quiesce(fn, session, false, forget, &s)) return st;
  std::string error = s->write_trace();
  s.reset();  // joins the delivery thread (once no flush of another thread holds it)
  if (!error.empty()) return make_status(EPPROF_IO_ERROR, std::string(fn) + ": " + error);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_get_state(epprof_session_t session, epprof_session_state* out) {
  EPPROF_API_BEGIN
  if (!out) return null_argument(fn, "out");
  std::shared_ptr<es::Session> s;
  if (epprof_status* st = es::find(fn, session, &s)) return st;
  *out = s->state();
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_get_stats(epprof_session_t session, epprof_session_stats* stats) {
  EPPROF_API_BEGIN
  if (!stats) return null_argument(fn, "stats");
  if (stats->size < sizeof(size_t))
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": stats->size (" + std::to_string(stats->size) +
                                                    ") is too small; set it to sizeof(epprof_session_stats)");
  std::shared_ptr<es::Session> s;
  if (epprof_status* st = es::find(fn, session, &s)) return st;
  epprof_session_stats st{};
  s->stats(st);
  st.size = std::min(stats->size, sizeof st);
  std::memcpy(stats, &st, st.size);
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_begin_pass(epprof_session_t session, uint32_t pass) {
  EPPROF_API_BEGIN
  std::shared_ptr<es::Session> s;
  if (epprof_status* st = es::find_for_passes(fn, session, &s)) return st;
  int64_t none = -1;
  if (!s->open_pass.compare_exchange_strong(none, int64_t(pass)))
    return make_status(EPPROF_FAILED_PRECONDITION,
                       std::string(fn) + ": pass " + std::to_string(none) + " is still open; end it first");
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_end_pass(epprof_session_t session) {
  EPPROF_API_BEGIN
  std::shared_ptr<es::Session> s;
  if (epprof_status* st = es::find_for_passes(fn, session, &s)) return st;
  if (s->open_pass.exchange(-1) < 0)
    return make_status(EPPROF_FAILED_PRECONDITION, std::string(fn) + ": no pass is open");
  return nullptr;
  EPPROF_API_END
}

EPPROF_API const uint32_t* epprof_session_active_word(void) { return &es::g_active_count; }

EPPROF_API int epprof_session_any_active(void) { return __atomic_load_n(&es::g_active_count, __ATOMIC_RELAXED) != 0; }

EPPROF_API epprof_status* epprof_session_emit(const epprof_record* records, size_t count) {
  if (__atomic_load_n(&es::g_active_count, __ATOMIC_RELAXED) == 0) return nullptr;
  if (count == 0) return nullptr;
  if (!records) return null_argument("epprof_session_emit", "records");
  es::Records in(records, count);
  if (epprof_status* st = in.check("epprof_session_emit")) return st;
  uint64_t mask = es::g_active_mask.load(std::memory_order_acquire);
  while (mask) {
    const uint32_t i = uint32_t(__builtin_ctzll(mask));
    mask &= mask - 1;
    es::Pin pin(i, 0);
    if (es::Session* s = pin.get()) s->offer(in.data(), count);
  }
  return nullptr;
}

EPPROF_API epprof_status* epprof_session_query_dispatch(const epprof_dispatch_info* info,
                                                        epprof_dispatch_request* out, size_t capacity,
                                                        size_t* count) {
  EPPROF_API_BEGIN
  if (!count) return null_argument(fn, "count");
  *count = 0;
  if (!info) return null_argument(fn, "info");
  if (!out && capacity) return null_argument(fn, "out");
  if (info->size < offsetof(epprof_dispatch_info, correlation_id) + sizeof(uint64_t))
    return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": info->size (" + std::to_string(info->size) +
                                                    ") is too small; set it to sizeof(epprof_dispatch_info)");
  if (__atomic_load_n(&es::g_active_count, __ATOMIC_RELAXED) == 0) return nullptr;
  epprof_dispatch_info norm;
  es::normalize(*info, norm);
  uint64_t mask = es::g_active_mask.load(std::memory_order_acquire);
  while (mask && *count < capacity) {
    const uint32_t i = uint32_t(__builtin_ctzll(mask));
    mask &= mask - 1;
    es::Pin pin(i, 0);
    es::Session* s = pin.get();
    if (!s || !s->settings().dispatch_callback) continue;
    const auto mode = s->settings().replay;
    const int64_t pass = s->open_pass.load(std::memory_order_acquire);
    if ((mode == EPPROF_REPLAY_APPLICATION || mode == EPPROF_REPLAY_USER) && pass < 0) continue;
    if (!s->admits_dispatch(norm)) continue;
    epprof_counter_config_t config{0};
    const epprof_session_t self{s->handle()};
    es::guarded(*s, "dispatch callback",
                [&] { return s->settings().dispatch_callback(s->settings().dispatch_user_data, self, &norm, &config); });
    if (!config.handle) continue;
    out[(*count)++] = epprof_dispatch_request{self, config, uint32_t(mode), pass < 0 ? 0u : uint32_t(pass)};
  }
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_session_deliver_counters(epprof_session_t session, const epprof_dispatch_info* info,
                                                          const epprof_record* records, size_t count) {
  EPPROF_API_BEGIN
  if (!info) return null_argument(fn, "info");
  if (count && !records) return null_argument(fn, "records");
  es::Records in(records, count);
  if (epprof_status* st = in.check(fn)) return st;
  records = in.data();
  if (session.handle == 0) return es::not_found(fn);
  es::Pin pin(es::slot_of(session.handle), session.handle);
  es::Session* s = pin.get();
  if (!s) {
    // Valid but stopped: the values arrive after the session stopped and are
    // not kept. Unknown or destroyed: not found.
    const auto lock = es::g_sessions.lock();
    return es::find_locked(session) ? nullptr : es::not_found(fn);
  }
  epprof_dispatch_info norm;
  es::normalize(*info, norm);
  s->count_dispatch(count);
  if (s->settings().counter_record_callback) {
    // The counter-name filter applies to the callback path too.
    epprof_record kept[64];
    std::vector<unsigned char> strided;  // the tool's stride, when not ours
    size_t n = 0;
    for (size_t i = 0; i < count; ++i) {
      if (s->filters().accepts(records[i])) kept[n++] = records[i];
      if (n == 64 || (i + 1 == count && n)) {
        const epprof_record* out = es::in_stride(kept, n, s->settings().record_size, &strided);
        es::guarded(*s, "counter record callback", [&] {
          return s->settings().counter_record_callback(s->settings().counter_record_user_data, session, &norm,
                                                       out, n);
        });
        n = 0;
      }
    }
  } else {
    s->offer_counters(records, count);
  }
  return nullptr;
  EPPROF_API_END
}

}  // extern "C"
