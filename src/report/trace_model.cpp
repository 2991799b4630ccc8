#include "report/trace_model.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "report/reader.h"
#include "tracedb/run_lookup.h"

namespace epprof::report {

uint32_t StringTable::intern(std::string_view s) {
  auto it = ids_.find(std::string(s));
  if (it != ids_.end()) return it->second;
  uint32_t id = uint32_t(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(strings_.back(), id);
  return id;
}

uint32_t StringTable::find(std::string_view s) const {
  auto it = ids_.find(std::string(s));
  return it == ids_.end() ? kNoString : it->second;
}

OrtGpuLink ort_gpu_link(const Event& e) {
  OrtGpuLink l;
  auto get = [&](const char* key, std::string_view* out) {
    if (const Arg* a = e.arg(key)) {
      *out = a->value;
      l.present = true;
    }
  };
  get("ort_correlation_id", &l.correlation_id);
  get("ort_event_name", &l.event_name);
  get("ort_op_name", &l.op_name);
  get("ort_node_index", &l.node_index);
  return l;
}

bool is_descriptive_arg(std::string_view k) {
  static const std::string_view kKeys[] = {
      "op_name", "provider", "node_index", "activation_size", "parameter_size", "output_size",
      "input_type_shape", "output_type_shape", "correlation_id", "parent_name", "unattributed",
      "thread_scheduling_stats", "queue", "stream", "device", "grid_x", "grid_y", "grid_z",
      "block_x", "block_y", "block_z", "global_size", "local_size", "kernel", "name",
      "ort_correlation_id", "ort_event_name", "ort_op_name", "ort_node_index",
      // the exact length of a slice written 1 us long in an integer-us trace
      "dur_ns",
      // a device's memory state when the node ran, not what the node did
      "mem_bytes_in_use", "mem_in_use_peak", "mem_arena_held"};
  for (std::string_view d : kKeys)
    if (k == d) return true;
  return false;
}

namespace {

constexpr std::string_view kKernelTime = "_kernel_time";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t corr_of(const Event& e) {
  int64_t v = 0;
  const Arg* a = e.arg("correlation_id");
  return a && arg_as_int(*a, &v) && v > 0 ? uint64_t(v) : 0;
}

class Loader {
 public:
  Loader(const LoadOptions& o, Trace* t) : o_(o), t_(*t) {}

  bool on_event(const Event& e, std::string* error) {
    if (!e.has_ph || !e.has_name) {
      *error = !e.has_ph ? "missing \"ph\"" : "missing \"name\"";
      return false;
    }
    if (e.ph == "X") return complete(e, error);
    if (e.ph == "M") return meta(e);
    if (e.ph == "C") return counter(e);
    if ((e.ph == "s" || e.ph == "f") && o_.keep_flows) {
      FlowPoint f;
      int64_t id = 0;
      Arg a{"id", e.id, ValueKind::kNumber};
      arg_as_int(a, &id);
      f.id = uint64_t(id);
      f.pid = e.pid;
      f.tid = e.tid;
      f.ts = e.ts;
      f.start = e.ph == "s";
      t_.flows.push_back(f);
    }
    return true;
  }

  void finish();

 private:
  bool complete(const Event& e, std::string* error) {
    if (!e.has_ts || !e.has_dur || !e.has_pid || !e.has_tid) {
      *error = std::string("complete event \"") + std::string(e.name) + "\" lacks " +
               (!e.has_ts ? "\"ts\"" : !e.has_dur ? "\"dur\"" : !e.has_pid ? "\"pid\"" : "\"tid\"");
      return false;
    }
    Slice s;
    s.ts = e.ts;
    s.dur = e.dur;
    // An integer-µs trace writes a slice shorter than 1 µs as 1 µs long,
    // with its exact length in "dur_ns".
    int64_t exact_ns;
    if (const Arg* a = e.arg("dur_ns"); a && e.dur <= 1 && arg_as_int(*a, &exact_ns) && exact_ns > 0 && exact_ns < 1000)
      s.dur = double(exact_ns) / 1000.0;
    s.pid = e.pid;
    s.tid = e.tid;
    s.corr = corr_of(e);
    s.cat_name = t_.strings.intern(e.cat);
    const bool device = e.cat == "Kernel" || e.cat == "Memcpy";
    if (e.cat == "Session" && e.name == "model_run") {
      s.name = t_.strings.intern(e.name);
      Run r;
      r.slice = s;
      t_.runs.push_back(r);
    } else if (e.cat == "Node") {
      if (ends_with(e.name, "_fence_before") || ends_with(e.name, "_fence_after")) return true;
      if (e.arg("replay_pass")) return true;  // a kernel replay (counters in several passes), not an execution
      std::string_view n = e.name;
      if (ends_with(n, kKernelTime)) n.remove_suffix(kKernelTime.size());
      s.name = t_.strings.intern(n);
      if (const Arg* a = e.arg("op_name")) s.op = t_.strings.intern(a->value);
      if (const Arg* a = e.arg("provider")) s.provider = t_.strings.intern(a->value);
      if (const Arg* a = e.arg("node_index")) s.node_index = t_.strings.intern(a->value);
      const int32_t node = int32_t(t_.nodes.size());
      for (const Arg& a : e.args) {
        double v;
        if (is_descriptive_arg(a.key) || !arg_as_double(a, &v)) continue;
        t_.counters.push_back({t_.strings.intern(a.key), v, node});
      }
      t_.nodes.push_back(s);
    } else if (device) {
      s.name = t_.strings.intern(e.name);
      if (const Arg* a = e.arg("op_name")) s.op = t_.strings.intern(a->value);
      if (const Arg* a = e.arg("parent_name")) s.parent = t_.strings.intern(a->value);
      if (const OrtGpuLink ort = ort_gpu_link(e); ort.complete_group()) {
        if (s.parent == kNoString) s.parent = t_.strings.intern(ort.event_name);
        if (s.op == kNoString) s.op = t_.strings.intern(ort.op_name);
        s.node_index = t_.strings.intern(ort.node_index);
      }
      t_.devices.push_back(s);
    } else if (o_.keep_others) {
      s.name = t_.strings.intern(e.name);
      t_.others.push_back(s);
    }
    return true;
  }

  bool meta(const Event& e) {
    const Arg* n = e.arg("name");
    if (e.name == "process_name" && n) t_.process_names[e.pid] = std::string(n->value);
    if (e.name == "thread_name" && n) t_.thread_names[{e.pid, e.tid}] = std::string(n->value);
    if (e.name == "epprof_metadata") {
      t_.epprof = true;
      int64_t v;
      if (const Arg* a = e.arg("warmup"); a && arg_as_int(*a, &v)) t_.warmup[e.pid] = int(v);
      if (const Arg* a = e.arg("t0_epoch_ns"); a && arg_as_int(*a, &v)) t_.t0_epoch_ns[e.pid] = v;
      if (const Arg* a = e.arg("memory"); a && a->kind == ValueKind::kObject) t_.memory_metadata[e.pid] = a->value;
    }
    return true;
  }

  bool counter(const Event& e) {
    const uint64_t corr = corr_of(e);
    for (const Arg& a : e.args) {
      double v;
      if (a.key == "correlation_id" || !arg_as_double(a, &v)) continue;
      // epprof writes {"name":N,"args":{N:value}}; other tools use "value"
      // or one key per series.
      std::string name(e.name);
      if (a.key != "value" && a.key != e.name) name += "." + std::string(a.key);
      const uint32_t id = t_.strings.intern(name);
      pending_counters_.push_back({{id, v, -1}, e.pid, e.tid, e.ts, corr});
      if (o_.keep_others) t_.counter_points.push_back({id, e.pid, e.tid, e.ts, v});
    }
    return true;
  }

  struct PendingCounter {
    CounterSample sample;
    int64_t pid, tid;
    double ts;
    uint64_t corr;
  };

  const LoadOptions& o_;
  Trace& t_;
  std::vector<PendingCounter> pending_counters_;
};

void Loader::finish() {
  std::stable_sort(t_.runs.begin(), t_.runs.end(), [](const Run& a, const Run& b) {
    return a.slice.pid != b.slice.pid ? a.slice.pid < b.slice.pid : a.slice.ts < b.slice.ts;
  });
  std::map<int64_t, int> seen;
  for (Run& r : t_.runs) {
    r.index_in_pid = seen[r.slice.pid]++;
    int skip = o_.skip_runs;
    if (skip < 0) {
      auto it = t_.warmup.find(r.slice.pid);
      skip = it == t_.warmup.end() ? 0 : it->second;
    }
    r.measured = r.index_in_pid >= skip && (o_.max_runs < 0 || r.index_in_pid < skip + o_.max_runs);
  }
  // The run (same pid) whose interval holds a moment, or -1; the end is
  // widened by 1 ns for times written in µs with three decimals.
  tracedb::RunLookup<double, int32_t> run_lookup;
  for (size_t i = 0; i < t_.runs.size(); ++i) {
    const Slice& s = t_.runs[i].slice;
    run_lookup.add(s.pid, {int32_t(i), s.ts, s.ts + s.dur});
  }
  run_lookup.sort();
  auto run_of = [&](int64_t pid, double ts) { return run_lookup.find(pid, ts, 1e-3, -1); };
  std::unordered_map<uint64_t, int32_t> by_corr;  // (pid, corr) folded
  std::map<std::pair<int64_t, uint32_t>, std::vector<int32_t>> by_name;
  auto key = [](int64_t pid, uint64_t corr) { return corr * 1000003u ^ uint64_t(pid); };
  for (size_t i = 0; i < t_.nodes.size(); ++i) {
    Slice& n = t_.nodes[i];
    n.run = run_of(n.pid, n.ts);
    if (n.corr) by_corr[key(n.pid, n.corr)] = int32_t(i);
    by_name[{n.pid, n.name}].push_back(int32_t(i));  // in file order, which is time order per thread
  }
  for (auto& [k, v] : by_name)
    std::sort(v.begin(), v.end(), [&](int32_t a, int32_t b) { return t_.nodes[size_t(a)].ts < t_.nodes[size_t(b)].ts; });
  auto node_by_corr = [&](int64_t pid, uint64_t corr) -> int32_t {
    auto it = by_corr.find(key(pid, corr));
    if (it == by_corr.end()) return -1;
    const Slice& n = t_.nodes[size_t(it->second)];
    return n.pid == pid && n.corr == corr ? it->second : -1;
  };
  for (Slice& d : t_.devices) {
    if (d.corr) d.node = node_by_corr(d.pid, d.corr);
    if (d.node < 0 && !d.corr && d.parent != kNoString) {
      // ONNX Runtime style: no correlation id of ours; the last execution of
      // the parent node (with the same node_index, when the device event
      // names one) that started before this device work: the one that
      // launched it.
      std::string_view parent = t_.strings.at(d.parent);
      if (ends_with(parent, kKernelTime)) parent.remove_suffix(kKernelTime.size());
      uint32_t pid_name = t_.strings.find(parent);
      auto it = by_name.find({d.pid, pid_name});
      if (it != by_name.end()) {
        const auto& v = it->second;
        auto pos = std::upper_bound(v.begin(), v.end(), d.ts,
                                    [&](double ts, int32_t n) { return ts < t_.nodes[size_t(n)].ts; });
        while (pos != v.begin() && d.node < 0) {
          --pos;
          const uint32_t index = t_.nodes[size_t(*pos)].node_index;
          if (d.node_index == kNoString || index == kNoString || index == d.node_index) d.node = *pos;
        }
      }
    }
    if (d.node >= 0) {
      d.run = t_.nodes[size_t(d.node)].run;
      if (d.op == kNoString) d.op = t_.nodes[size_t(d.node)].op;
    } else {
      d.run = run_of(d.pid, d.ts);
      ++t_.unattributed_devices;
    }
  }
  // A trace without flow events (ONNX Runtime's) gets one from each node to
  // the device work attributed to it.
  if (o_.keep_flows && t_.flows.empty()) {
    uint64_t id = 0;
    for (const Slice& d : t_.devices) {
      if (d.node < 0) continue;
      const Slice& n = t_.nodes[size_t(d.node)];
      ++id;
      t_.flows.push_back({id, n.pid, n.tid, n.ts, true});
      t_.flows.push_back({id, d.pid, d.tid, d.ts, false});
    }
  }
  // Counter samples: by correlation id, else the node running on that
  // thread at that moment.
  std::map<std::pair<int64_t, int64_t>, std::vector<int32_t>> by_track;
  if (!pending_counters_.empty()) {
    for (size_t i = 0; i < t_.nodes.size(); ++i) by_track[{t_.nodes[i].pid, t_.nodes[i].tid}].push_back(int32_t(i));
    for (auto& [k, v] : by_track)
      std::sort(v.begin(), v.end(), [&](int32_t a, int32_t b) { return t_.nodes[size_t(a)].ts < t_.nodes[size_t(b)].ts; });
  }
  // epprof writes a counter both as an arg of its node and as a counter
  // track sample: count it once.
  std::set<std::pair<int32_t, uint32_t>> on_node;
  for (const CounterSample& c : t_.counters) on_node.insert({c.node, c.counter});
  for (PendingCounter& c : pending_counters_) {
    int32_t node = c.corr ? node_by_corr(c.pid, c.corr) : -1;
    auto it = by_track.find({c.pid, c.tid});
    if (node < 0 && it != by_track.end()) {
      const auto& v = it->second;
      auto pos = std::upper_bound(v.begin(), v.end(), c.ts,
                                  [&](double ts, int32_t n) { return ts < t_.nodes[size_t(n)].ts; });
      if (pos != v.begin()) {
        const Slice& n = t_.nodes[size_t(*(pos - 1))];
        if (c.ts <= n.ts + n.dur) node = *(pos - 1);
      }
    }
    c.sample.node = node;
    if (node >= 0 && on_node.count({node, c.sample.counter})) continue;
    t_.counters.push_back(c.sample);
  }
  pending_counters_.clear();
}

bool load_common(const std::function<ReadResult(const EventCallback&, const ReadOptions&)>& read,
                 const LoadOptions& options, Trace* trace, std::string* error) {
  Loader loader(options, trace);
  ReadOptions ro;
  ro.progress = options.progress;
  ReadResult r = read([&](const Event& e, std::string* err) { return loader.on_event(e, err); }, ro);
  if (!r.ok) {
    *error = r.error;
    return false;
  }
  trace->events = r.events;
  trace->bytes = r.bytes;
  loader.finish();
  return true;
}

}  // namespace

bool load_trace(const std::string& path, const LoadOptions& options, Trace* trace, std::string* error) {
  return load_common([&](const EventCallback& cb, const ReadOptions& ro) { return read_trace_file(path, cb, ro); },
                     options, trace, error);
}

bool load_trace_buffer(std::string_view data, const LoadOptions& options, Trace* trace, std::string* error) {
  return load_common([&](const EventCallback& cb, const ReadOptions& ro) { return read_trace_buffer(data, cb, ro); },
                     options, trace, error);
}

}  // namespace epprof::report
