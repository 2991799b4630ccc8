#include "dispatch_service.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "epprof/counters.h"
#include "epprof/host.h"
#include "epprof/rt/cost_model.h"
#include "epprof/rt/graph.h"
#include "epprof/rt/tensor.h"
#include "epprof/session.h"

namespace epprof::rt {

namespace {

// epprof_session_active_word() read as epprof/host.h says: one relaxed
// load, no call, before every dispatch.
inline bool any_active(const uint32_t* word) { return __atomic_load_n(word, __ATOMIC_RELAXED) != 0; }

constexpr size_t kMaxRequests = 8;

epprof_name_id intern(const std::string& s) {
  epprof_name_id id = 0;
  epprof_status_release(epprof_intern_n(s.data(), s.size(), &id));  // names may hold NUL bytes
  return id;
}

uint32_t current_tid() {
  static thread_local const uint32_t tid = uint32_t(syscall(SYS_gettid));
  return tid;
}

// A counting context of this thread for one configuration.
struct Context {
  epprof_counting_context_t ctx{0};
  size_t num_counters = 0;
  uint32_t passes = 1;
  std::vector<epprof_name_id> names;
};

struct Request {
  epprof_dispatch_request req;
  Context* context = nullptr;
  uint32_t pass = 0;      // pass of the first execution
  int shares = -1;        // index of an earlier request with the same context and pass
  bool started = false;
  std::vector<epprof_counter_value> values;  // merged over passes
};

// One node execution in flight on a thread.
struct Dispatch {
  const DispatchService* owner = nullptr;  // set while a session sees the dispatch
  epprof_dispatch_info info{};
  const DispatchNode* ids = nullptr;
  int64_t ts = 0, dur = 0;
  Request reqs[kMaxRequests];
  size_t n = 0;
  uint32_t replays = 0;
  epprof_dispatch_measures measures{};
};

// Per thread: the contexts (reused across dispatches) and the dispatches in
// flight, innermost last: a node with subgraphs (If, Loop, ...) is in
// flight while its subgraphs' nodes run on the same thread. A dispatch is
// pushed by node_begin and popped when it is finished (node_end, the last
// replay_end, or node_failed).
struct ThreadState {
  std::unordered_map<uint64_t, Context> contexts;  // by configuration handle
  std::vector<std::unique_ptr<Dispatch>> stack;    // kept allocated; `depth` in use
  size_t depth = 0;
  std::vector<epprof_counter_value> scratch;
  std::vector<epprof_record> records;

  Dispatch& push() {
    if (depth == stack.size()) stack.push_back(std::make_unique<Dispatch>());
    return *stack[depth++];
  }
  // The innermost dispatch, if it is `info`'s (else null).
  Dispatch* top(const NodeInfo& info) {
    Dispatch* d = depth ? stack[depth - 1].get() : nullptr;
    return d && d->info.correlation_id == info.correlation_id ? d : nullptr;
  }
  void pop() {
    if (depth) stack[--depth]->owner = nullptr;
  }

  ~ThreadState() {
    for (auto& kv : contexts) epprof_status_release(epprof_counting_context_destroy(kv.second.ctx));
  }
};

ThreadState& state() {
  static thread_local ThreadState t;
  return t;
}

bool integral(double v) { return std::fabs(v) < 9.0e15 && v == std::floor(v); }

}  // namespace

DispatchService::DispatchService(epprof_profiler_t trace_profiler, std::string device)
    : trace_profiler_(trace_profiler), device_(std::move(device)), active_(epprof_session_active_word()) {}

DispatchService::~DispatchService() = default;

void DispatchService::report(const char* what, epprof_status* status) noexcept {
  if (!status) return;
  if (errors_.fetch_add(1) == 0)
    std::fprintf(stderr, "epprof runtime: sessions: %s: %s (further errors only counted)\n", what,
                 epprof_status_get_message(status));
  epprof_status_release(status);
}

namespace {

epprof_record host_record(uint64_t corr, epprof_name_id name, int64_t ts, int64_t dur, uint64_t run_id) {
  epprof_record r{};
  r.size = sizeof r;
  r.kind = EPPROF_RECORD_HOST_EVENT;
  r.category = EPPROF_CATEGORY_SESSION;
  r.correlation_id = corr;
  r.ts_ns = ts;
  r.dur_ns = dur;
  r.name = name;
  r.node_index = EPPROF_RECORD_NO_NODE;
  r.run_id = run_id;
  r.tid = current_tid();
  return r;
}

}  // namespace

// Session phases and runs: the start is kept by correlation id (a run may
// end on another thread) and one HOST_EVENT record is emitted at the end.
void DispatchService::open_span(uint64_t correlation_id) {
  if (!any_active(active_)) return;
  std::lock_guard<std::mutex> lock(mu_);
  open_ts_[correlation_id] = epprof_clock_now_ns();
}

void DispatchService::close_span(uint64_t correlation_id, epprof_name_id name, uint64_t run_id) {
  if (!any_active(active_)) return;
  int64_t start = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_ts_.find(correlation_id);
    if (it == open_ts_.end()) return;  // opened while no session was active
    start = it->second;
    open_ts_.erase(it);
  }
  const epprof_record r = host_record(correlation_id, name, start, epprof_clock_now_ns() - start, run_id);
  report("emit", epprof_session_emit(&r, 1));
}

void DispatchService::node_begin(const NodeInfo& info, const DispatchNode& node) {
  ThreadState& ts = state();
  Dispatch& t = ts.push();
  t.owner = nullptr;
  t.info.correlation_id = info.correlation_id;
  if (!any_active(active_)) return;
  t.owner = this;
  t.n = 0;
  t.replays = 0;
  t.ids = &node;
  epprof_dispatch_info& d = t.info;
  d = epprof_dispatch_info{};
  d.size = sizeof d;
  d.correlation_id = info.correlation_id;
  d.node_index = uint32_t(info.node.index);
  d.node_name = info.node.name.c_str();
  d.op_type = info.node.op_type.c_str();
  d.ep_name = info.provider.c_str();
  d.kernel_name = t.ids->kernel_name;
  d.device = device_.c_str();
  d.queue = current_tid();
  d.run_id = info.run_id;
  d.node_name_id = t.ids->node;
  d.op_type_id = t.ids->op_type;
  d.ep_name_id = t.ids->ep;
  d.kernel_name_id = t.ids->kernel;

  epprof_dispatch_request reqs[kMaxRequests];
  size_t n = 0;
  if (!t.ids->has_subgraphs) report("query dispatch", epprof_session_query_dispatch(&d, reqs, kMaxRequests, &n));
  for (size_t i = 0; i < n; ++i) {
    const uint64_t config = reqs[i].config.handle;
    auto it = ts.contexts.find(config);
    if (it == ts.contexts.end()) {
      Context c;
      epprof_status* st = epprof_counting_context_create(reqs[i].config, &c.ctx);
      if (!st) st = epprof_counter_config_counter_count(reqs[i].config, &c.num_counters);
      if (!st) st = epprof_counter_config_pass_count(reqs[i].config, &c.passes);
      for (size_t k = 0; !st && k < c.num_counters; ++k) {
        epprof_counter_info ci{};
        ci.size = sizeof ci;
        st = epprof_counter_config_get_counter(reqs[i].config, k, &ci, nullptr);
        if (!st) c.names.push_back(intern(ci.name));
      }
      if (st) {
        if (c.ctx.handle) epprof_status_release(epprof_counting_context_destroy(c.ctx));
        report("counting context", st);
        continue;
      }
      it = ts.contexts.emplace(config, std::move(c)).first;
    }
    Request& r = t.reqs[t.n];
    r.req = reqs[i];
    r.context = &it->second;
    r.started = false;
    r.shares = -1;
    switch (epprof_replay_mode(reqs[i].replay_mode)) {
      case EPPROF_REPLAY_NONE:
        r.pass = r.context->passes > 1 ? EPPROF_COUNTER_PASS_MULTIPLEX : 0;
        break;
      case EPPROF_REPLAY_KERNEL:
        r.pass = 0;
        t.replays = std::max(t.replays, r.context->passes - 1);
        break;
      default:
        r.pass = reqs[i].pass;
        if (r.pass >= r.context->passes) {
          report("dispatch", epprof_status_create(EPPROF_INVALID_ARGUMENT,
                                                  ("pass " + std::to_string(r.pass) + " is open but the configuration has " +
                                                   std::to_string(r.context->passes) + " passes").c_str()));
          continue;
        }
    }
    for (size_t k = 0; k < t.n; ++k)
      if (t.reqs[k].context == r.context && t.reqs[k].pass == r.pass && t.reqs[k].shares < 0) r.shares = int(k);
    r.values.assign(r.context->num_counters, epprof_counter_value{});
    ++t.n;
  }
  t.ts = epprof_clock_now_ns();
  for (size_t i = 0; i < t.n; ++i) {
    Request& r = t.reqs[i];
    if (r.shares >= 0) continue;
    epprof_status* st = epprof_counting_context_start(r.context->ctx, r.pass);
    r.started = st == nullptr;
    report("counting start", st);
  }
}

bool DispatchService::node_counted(const NodeInfo& info, const NodeIo& io) {
  ThreadState& ts = state();
  Dispatch* top = ts.top(info);
  if (!top || top->owner != this) {
    if (top) ts.pop();
    return false;
  }
  Dispatch& t = *top;
  for (size_t i = t.n; i-- > 0;)
    if (t.reqs[i].started) report("counting stop", epprof_counting_context_stop(t.reqs[i].context->ctx));
  const int64_t end = epprof_clock_now_ns();
  t.dur = end - t.ts;
  if (t.n) {
    const NodeCost cost = node_cost(info.node, io);
    t.measures = epprof_dispatch_measures{};
    t.measures.size = sizeof t.measures;
    t.measures.known = EPPROF_MEASURE_DURATION | EPPROF_MEASURE_FLOPS | EPPROF_MEASURE_BYTES;
    t.measures.duration_ns = uint64_t(t.dur);
    t.measures.flops = cost.flops;
    t.measures.bytes = cost.bytes;
    for (size_t i = 0; i < t.n; ++i) {
      Request& r = t.reqs[i];
      if (!r.started) continue;
      report("counting read", epprof_counting_context_read(r.context->ctx, &t.measures, r.values.data(), r.values.size()));
    }
  }
  return true;
}

namespace {

// A record of the dispatch `t` of `info`'s node: its NODE record, or one
// of its COUNTER records.
epprof_record dispatch_record(const Dispatch& t, const NodeInfo& info, epprof_record_kind kind, epprof_category category,
                              epprof_name_id name) {
  epprof_record r{};
  r.size = sizeof r;
  r.kind = kind;
  r.category = category;
  r.correlation_id = info.correlation_id;
  r.ts_ns = t.ts;
  r.dur_ns = t.dur;
  r.name = name;
  r.node = t.ids->node;
  r.op_type = t.ids->op_type;
  r.ep = t.ids->ep;
  r.kernel = t.ids->kernel;
  r.node_index = uint32_t(info.node.index);
  r.run_id = info.run_id;
  r.tid = current_tid();
  return r;
}

}  // namespace

void DispatchService::node_recorded(const NodeInfo& info) {
  Dispatch& t = *state().top(info);  // node_counted said it is ours
  const epprof_record node = dispatch_record(t, info, EPPROF_RECORD_HOST_EVENT, EPPROF_CATEGORY_NODE, t.ids->node);
  report("emit", epprof_session_emit(&node, 1));
  if (t.replays == 0) finish_dispatch(info);
}

void DispatchService::node_failed(const NodeInfo& info) {
  ThreadState& ts = state();
  if (Dispatch* t = ts.top(info)) {
    if (t->owner == this)
      for (size_t i = t->n; i-- > 0;)
        if (t->reqs[i].started) epprof_status_release(epprof_counting_context_stop(t->reqs[i].context->ctx));
    ts.pop();  // a failed dispatch delivers no counters
  }
}

uint32_t DispatchService::kernel_replays(const NodeInfo& info) {
  const Dispatch* t = state().top(info);
  return t && t->owner == this ? t->replays : 0;
}

void DispatchService::replay_begin(const NodeInfo& info, const ReplayInfo& replay) {
  const uint32_t pass = replay.pass;
  Dispatch* top = state().top(info);
  if (!top || top->owner != this) return;
  Dispatch& t = *top;
  for (size_t i = 0; i < t.n; ++i) {
    Request& r = t.reqs[i];
    r.started = false;
    if (r.req.replay_mode != EPPROF_REPLAY_KERNEL || r.shares >= 0 || pass >= r.context->passes) continue;
    epprof_status* st = epprof_counting_context_start(r.context->ctx, pass);
    r.started = st == nullptr;
    report("counting start (replay)", st);
  }
}

void DispatchService::replay_end(const NodeInfo& info, const ReplayInfo& replay, const char* error) {
  const uint32_t pass = replay.pass;
  ThreadState& ts = state();
  Dispatch* top = ts.top(info);
  if (!top || top->owner != this) return;
  Dispatch& t = *top;
  for (size_t i = t.n; i-- > 0;)
    if (t.reqs[i].started) report("counting stop (replay)", epprof_counting_context_stop(t.reqs[i].context->ctx));
  if (error) {
    report("kernel replay", epprof_status_create(EPPROF_INTERNAL, (std::string("pass ") + std::to_string(pass) +
                                                                   " of node '" + info.node.name + "' threw: " + error)
                                                                      .c_str()));
  } else {
    for (size_t i = 0; i < t.n; ++i) {
      Request& r = t.reqs[i];
      if (!r.started) continue;
      ts.scratch.assign(r.values.size(), epprof_counter_value{});
      epprof_status* st = epprof_counting_context_read(r.context->ctx, &t.measures, ts.scratch.data(), ts.scratch.size());
      if (st) {
        report("counting read (replay)", st);
        continue;
      }
      // Each counter's value comes from the pass that counts it.
      for (size_t k = 0; k < r.values.size(); ++k)
        if ((r.values[k].flags & EPPROF_COUNTER_VALUE_NOT_IN_PASS) && !(ts.scratch[k].flags & EPPROF_COUNTER_VALUE_NOT_IN_PASS))
          r.values[k] = ts.scratch[k];
    }
  }
  if (pass == t.replays) finish_dispatch(info);
}

void DispatchService::finish_dispatch(const NodeInfo& info) noexcept {
  ThreadState& ts = state();
  Dispatch& t = *ts.top(info);  // the caller checked it is ours
  struct Pop {
    ThreadState& ts;
    ~Pop() { ts.pop(); }
  } pop{ts};
  if (t.n == 0) return;
  try {
    std::vector<epprof_arg> args;
    std::vector<std::string> texts;
    texts.reserve(64);
    bool delivered = false;
    for (size_t i = 0; i < t.n; ++i) {
      Request& r = t.reqs[i];
      const Request& src = r.shares >= 0 ? t.reqs[r.shares] : r;
      ts.records.clear();
      for (size_t k = 0; k < src.values.size(); ++k) {
        const epprof_counter_value& v = src.values[k];
        epprof_record c =
            dispatch_record(t, info, EPPROF_RECORD_COUNTER, EPPROF_CATEGORY_COUNTER, src.context->names[k]);
        c.counter_flags = v.flags;
        c.value = v.value;
        c.time_enabled_ns = v.time_enabled_ns;
        c.time_running_ns = v.time_running_ns;
        ts.records.push_back(c);
        if (trace_profiler_.handle && (v.flags & EPPROF_COUNTER_VALUE_VALID) && args.size() < 32) {
          bool dup = false;
          for (const auto& a : args) dup = dup || a.key == c.name;
          if (dup) continue;
          epprof_arg a{};
          a.key = c.name;
          if (integral(v.value)) {
            a.type = EPPROF_ARG_INT64;
            a.value.i64 = int64_t(v.value);
          } else {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.6g", v.value);
            texts.emplace_back(buf);
            a.type = EPPROF_ARG_STRING;
            a.value.str = texts.back().c_str();
          }
          args.push_back(a);
        }
      }
      epprof_status* st = epprof_session_deliver_counters(r.req.session, &t.info, ts.records.data(), ts.records.size());
      delivered = delivered || st == nullptr;
      report("deliver counters", st);
    }
    if (!args.empty())
      report("annotate", epprof_event_annotate(trace_profiler_, info.correlation_id, args.data(), args.size()));
    if (delivered) counted_.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    report("deliver counters", epprof_status_create(EPPROF_OUT_OF_MEMORY, "out of memory"));
  }
}

}  // namespace epprof::rt
