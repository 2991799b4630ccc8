#include "core/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>
#include <stdexcept>

#include "base/status.h"
#include "core/args.h"
#include "core/intern.h"
#include "io/atomic_file.h"

namespace epprof::core {

Profiler::Profiler(ScopeConfig config) : recording_(std::move(config)) {}

Profiler::~Profiler() = default;

void Profiler::add_ep(std::unique_ptr<EpHooks> ep) {
  eps_want_events_ = eps_want_events_ || ep->wants_events();
  eps_want_stop_ = eps_want_stop_ || ep->wants_stop_event();
  eps_.push_back(std::move(ep));
}

void Profiler::start() {
  recording_.start();
  state_.store(State::kRunning, std::memory_order_release);
  for (auto& ep : eps_) ep->start_profiling(recording_.start_pair().ns);
}

void Profiler::stop() {
  recording_.stop();
  state_.store(State::kStopped, std::memory_order_release);
}

epprof_status* Profiler::too_deep() const noexcept {
  return base::status_from(EPPROF_RESOURCE_EXHAUSTED, [&] { return std::string("epprof_event_begin: more than " + std::to_string(kMaxOpenEvents) +
                              " nested events are open on this thread"); });
}

epprof_status* Profiler::mismatched_end(const ThreadStream& s, uint64_t id) const noexcept {
  if (s.depth == 0)
    return base::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: no event is open on this thread (correlation id " +
                                std::to_string(id) + ")"); });
  return base::status_from(EPPROF_INVALID_ARGUMENT, [&] { return std::string("epprof_event_end: correlation id " + std::to_string(id) +
                              " is not the innermost open event on this thread (that is " +
                              std::to_string(s.innermost().correlation_id) +
                              "); events must be properly nested"); });
}

void Profiler::notify_stop(const ThreadStream& s, const OpenEvent& o, uint64_t end_ticks,
                           const epprof_arg* args, size_t num_args) noexcept {
  // Plugins see an arg set's args in its place.
  thread_local std::vector<epprof_arg> expanded;
  if (std::any_of(args, args + num_args, [](const epprof_arg& a) { return a.type == EPPROF_ARG_SET; })) {
    try {
      expanded.clear();
      for (size_t i = 0; i < num_args; ++i) {
        const ArgSet* set = args[i].type == EPPROF_ARG_SET ? arg_set(args[i].value.set) : nullptr;
        if (set)
          expanded.insert(expanded.end(), set->args.begin(), set->args.end());
        else
          expanded.push_back(args[i]);
      }
      args = expanded.data();
      num_args = expanded.size();
    } catch (const std::bad_alloc&) {
      num_args = 0;  // out of memory: the plugin sees the event without its args
    }
  }
  const std::string* name = interned(o.name);
  const EndedEvent ended{epprof_category(o.category),
                         name ? name->c_str() : "",
                         pid_,
                         s.tid,
                         recording_.provisional().to_ns(o.ts) - recording_.start_pair().ns,
                         recording_.provisional().duration_ns(end_ticks - o.ts),
                         o.correlation_id,
                         args,
                         num_args};
  for (auto& ep : eps_) ep->stop_event(ended);
}

// Names the first desc that is not an interned name with an arg set, or
// returns NULL when every one is.
[[gnu::cold, gnu::noinline]] static epprof_status* bad_desc(const epprof_event_desc* descs, uint32_t count) noexcept {
  for (uint32_t i = 0; i < count; ++i) {
    const epprof_event_desc& d = descs[i];
    if (!is_interned(d.name) || (d.args && !is_arg_set(d.args)))
      return base::status_from(EPPROF_INVALID_ARGUMENT, [&] {
        return "epprof_event_block_open: descs[" + std::to_string(i) + "]: " +
               (!is_interned(d.name) ? "name " + std::to_string(d.name) + " is not an id returned by epprof_intern"
                                     : "args " + std::to_string(d.args) +
                                           " is not an id returned by epprof_arg_set_intern");
      });
  }
  return nullptr;
}

epprof_status* Profiler::open_block(ThreadStream& s, BlockState& b, uint8_t category, uint64_t first_id,
                                    uint32_t count, const epprof_event_desc* descs) noexcept {
  // A run opens its block once per run: every desc is checked against two
  // counts read once (ids are dense), in a loop with no branch or call.
  const uint32_t names = interned_count(), sets = g_arg_sets_published.load(std::memory_order_relaxed);
  bool valid = true;
  for (uint32_t i = 0; i < count; ++i) valid &= (descs[i].name - 1u < names) & (descs[i].args <= sets);
  if (__builtin_expect(!valid, 0))  // (none, if another thread interned the missing ids since)
    if (epprof_status* st = bad_desc(descs, count)) return st;
  b = BlockState{&s, descs, first_id, 0, BlockState::kNone, count, BlockState::kOpen, category,
                 uint8_t(ticks_are_tsc()), this};
  open_blocks_.fetch_add(1, std::memory_order_acq_rel);
  return nullptr;
}

epprof_status* Profiler::block_end_with_args(BlockState& b, const epprof_arg* args, size_t num_args) noexcept {
  const uint64_t t = now_ticks(b.tsc);
  const OpenEvent o{b.start, b.first_id + b.begun, b.descs[b.begun].name, b.category};
  ThreadStream& s = *b.stream;
  // One arg set (a node's args for shapes outside its block's epoch, say)
  // is recorded as a desc's: no arg plan, no encoding.
  if (const uint32_t set = lone_set(args, num_args); set && known_set(s, set)) {
    emit(recording_.recorder().reserve(s, set_slots(set)), o, t, set);
  } else if (epprof_status* st = write_with_args(s, o, t - b.start, 0, args, num_args, "epprof_event_block_end_with_args")) {
    return st;
  }
  b.begun = BlockState::kNone;
  return nullptr;
}

}  // namespace epprof::core
