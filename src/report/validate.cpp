#include "report/validate.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "report/reader.h"
#include "report/trace_model.h"

namespace epprof::report {

uint64_t ValidateResult::total() const {
  uint64_t n = 0;
  for (const auto& [k, v] : counts) n += v;
  return n;
}

namespace {

struct HostRef {
  uint32_t name = kNoString, op = kNoString, node_index = kNoString;
  bool is_node = false;
  uint64_t index = 0;
};

struct DeviceRef {
  int64_t pid = 0;
  uint64_t corr = 0;
  uint32_t op = kNoString, node_index = kNoString, parent = kNoString;
  uint64_t index = 0, offset = 0;
};

// A GPU event of ONNX Runtime's plugin EP that names its node
// (ort_event_name, ort_op_name, ort_node_index), and the node events it may
// resolve to.
struct OrtDeviceRef {
  int64_t pid = 0;
  uint32_t event = kNoString, op = kNoString, node_index = kNoString;
  double ts = 0;
  uint64_t index = 0, offset = 0;
};
struct NodeRef {
  double ts = 0;
  uint32_t op = kNoString, node_index = kNoString;
  uint64_t index = 0;
};

struct Interval {
  double ts, end;
  uint64_t index, offset;
  bool integer;
};


bool is_integer_text(std::string_view s) { return s.find_first_of(".eE") == std::string_view::npos; }

class Validator {
 public:
  explicit Validator(size_t max_listed) : max_(max_listed) {}

  void add(const std::string& kind, const std::string& msg) {
    r_.counts[kind]++;
    if (r_.violations.size() < max_) r_.violations.push_back({kind, msg});
  }

  bool on_event(const Event& e) {
    rows_ = e.from_database;
    const std::string at = where(e.index, e.offset);
    for (auto [has, field] : {std::pair{e.has_cat, "cat"}, {e.has_name, "name"}, {e.has_ph, "ph"}})
      if (!has) add("required-field", at + ": missing \"" + field + "\"");
    if (!e.has_ph) return true;
    const std::string name = "\"" + std::string(e.name) + "\"";
    auto need = [&](bool has, const char* field) {
      if (!has) add("required-field", at + " " + name + " (ph " + std::string(e.ph) + "): missing \"" + field + "\"");
      return has;
    };
    if (e.ph == "X") {
      // Each missing field is its own violation: no short-circuit.
      const bool pid = need(e.has_pid, "pid"), tid = need(e.has_tid, "tid");
      const bool ts = need(e.has_ts, "ts"), dur = need(e.has_dur, "dur");
      if (!(pid && tid && ts && dur)) return true;
      if (e.dur < 0) add("negative-duration", at + " " + name + ": dur " + std::string(e.dur_raw) + " < 0");
      // Track order, in both of the orders epprof has written: by start
      // (traces from before event_order) and by end (ONNX Runtime's). The
      // metadata, at the end of the file, says which applies.
      const bool integer = is_integer_text(e.ts_raw) && is_integer_text(e.dur_raw);
      auto [it, fresh] = last_ts_.try_emplace({e.pid, e.tid}, e.ts);
      if (!fresh) {
        if (e.ts < it->second)
          start_order_.push_back(at + " " + name + " on track pid " + std::to_string(e.pid) + " tid " +
                                 std::to_string(e.tid) + ": ts " + std::string(e.ts_raw) +
                                 " is before the previous event's ts on that track");
        else
          it->second = e.ts;
      }
      auto [end, first] = last_end_.try_emplace({e.pid, e.tid}, e.ts + e.dur);
      if (!first) {
        // Integer µs: a slice under 1 µs is written 1 µs long, so its end
        // may pass a later slice's by that much.
        if (e.ts + e.dur < end->second - (integer ? 1.0 : 0.0))
          end_order_.push_back(at + " " + name + " on track pid " + std::to_string(e.pid) + " tid " +
                               std::to_string(e.tid) + ": ends at " + std::to_string(e.ts + e.dur) +
                               " us, before the previous event on that track (" + std::to_string(end->second) +
                               " us); events are written by end time");
        else
          end->second = std::max(end->second, e.ts + e.dur);
      }
      tracks_[{e.pid, e.tid}].push_back(
          {e.ts, e.ts + e.dur, e.index, e.offset, is_integer_text(e.ts_raw) && is_integer_text(e.dur_raw)});
      complete(e, at);
    } else if (e.ph == "s" || e.ph == "f" || e.ph == "t") {
      need(e.has_pid, "pid");
      need(e.has_ts, "ts");
      if (need(!e.id.empty(), "id")) (e.ph == "s" ? flow_starts_ : flow_ends_)[std::string(e.id)]++;
    } else if (e.ph == "M") {
      need(e.has_pid, "pid");
      if (e.name == "epprof_metadata") {
        epprof_ = true;
        const Arg* order = e.arg("event_order");
        end_order_written_ = order && order->value == "end";
      }
    } else if (e.ph == "B" || e.ph == "E" || e.ph == "i" || e.ph == "I" || e.ph == "C") {
      need(e.has_pid, "pid");
      need(e.has_ts, "ts");
    }
    return true;
  }

  void complete(const Event& e, const std::string& at) {
    int64_t corr_i = 0;
    const Arg* c = e.arg("correlation_id");
    const bool has_corr = c && arg_as_int(*c, &corr_i);
    if (c && !has_corr) add("correlation", at + ": correlation_id \"" + std::string(c->value) + "\" is not an integer");
    const bool device = e.cat == "Kernel" || e.cat == "Memcpy";
    auto id_of = [&](const char* key) {
      const Arg* a = e.arg(key);
      return a ? strings_.intern(a->value) : kNoString;
    };
    if (device) {
      const Arg* un = e.arg("unattributed");
      if (un && un->value == "true") return;  // the writer says it could not attribute it
      if (!has_corr) {
        if (const OrtGpuLink ort = ort_gpu_link(e); ort.present)
          ort_device(e, at, ort);
        else
          devices_without_corr_.push_back(at + " \"" + std::string(e.name) + "\"");
        return;
      }
      devices_.push_back({e.pid, uint64_t(corr_i), id_of("op_name"), id_of("node_index"), id_of("parent_name"),
                          e.index, e.offset});
      return;
    }
    if (e.cat == "Session" && e.name == "model_run")
      runs_[e.pid].push_back({e.ts, e.ts + e.dur, e.index, e.offset,
                              is_integer_text(e.ts_raw) && is_integer_text(e.dur_raw)});
    const bool node = e.cat == "Node";
    if (node)
      ort_nodes_[{e.pid, strings_.intern(e.name)}].push_back({e.ts, id_of("op_name"), id_of("node_index"), e.index});
    if (node)
      nodes_.push_back(
          {e.pid, {e.ts, e.ts + e.dur, e.index, e.offset, is_integer_text(e.ts_raw) && is_integer_text(e.dur_raw)}});
    if (has_corr) {
      HostRef h;
      h.name = strings_.intern(e.name);
      h.is_node = node;
      h.op = id_of("op_name");
      h.node_index = id_of("node_index");
      h.index = e.index;
      auto [it, fresh] = hosts_.try_emplace(key(e.pid, uint64_t(corr_i)), h);
      if (!fresh)
        add("correlation", at + ": correlation_id " + std::to_string(corr_i) + " is already used by host event #" +
                               std::to_string(it->second.index));
    }
  }

  ValidateResult finish() {
    auto str = [&](uint32_t id) { return id == kNoString ? std::string("(none)") : strings_.at(id); };
    for (const DeviceRef& d : devices_) {
      const std::string at = where(d.index, d.offset);
      auto it = hosts_.find(key(d.pid, d.corr));
      if (it == hosts_.end()) {
        add("correlation", at + ": correlation_id " + std::to_string(d.corr) +
                               " resolves to no host event of process " + std::to_string(d.pid));
        continue;
      }
      const HostRef& h = it->second;
      auto check = [&](const char* field, uint32_t dev, uint32_t want) {
        if (dev != want)
          add("attribution", at + ": " + field + " \"" + str(dev) + "\" but host event #" +
                                 std::to_string(h.index) + " (correlation_id " + std::to_string(d.corr) + ") has \"" +
                                 str(want) + "\"");
      };
      check("parent_name", d.parent, h.name);
      if (h.is_node) {
        check("op_name", d.op, h.op);
        check("node_index", d.node_index, h.node_index);
      }
    }
    resolve_ort_devices();
    // epprof writes each track in order (by end time since event_order;
    // before it, by start) and always attributes device events; ONNX
    // Runtime writes events as they end and has no ids.
    if (epprof_)
      for (const std::string& m : end_order_written_ ? end_order_ : start_order_) add("track-order", m);
    if (epprof_)
      for (const std::string& at : devices_without_corr_) add("correlation", at + ": device event has no correlation_id");
    check_overlaps();
    // A node is inside a model_run when some run of its process starts
    // before it and ends after it: with runs sorted by start and the running
    // maximum of their ends, one binary search answers that for any number
    // of concurrent runs (threads of a demo, parallel sessions).
    std::map<int64_t, std::vector<double>> max_end;
    for (auto& [pid, v] : runs_) {
      std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.ts < b.ts; });
      auto& m = max_end[pid];
      for (const Interval& r : v) m.push_back(m.empty() ? r.end : std::max(m.back(), r.end));
    }
    for (const auto& [pid, n] : nodes_) {
      auto it = runs_.find(pid);
      const std::string at = where(n.index, n.offset);
      if (it == runs_.end()) {
        add("nesting", at + ": node event in process " + std::to_string(pid) + ", which has no model_run");
        continue;
      }
      const auto& v = it->second;
      const double tol = n.integer ? 1.0 : 2e-3;  // integer µs round each side
      const size_t started = size_t(
          std::upper_bound(v.begin(), v.end(), n.ts + tol, [](double t, const Interval& r) { return t < r.ts; }) -
          v.begin());
      const bool inside = started > 0 && max_end[pid][started - 1] >= n.end - tol;
      if (!inside) add("nesting", at + ": node event [" + std::to_string(n.ts) + ", " + std::to_string(n.end) +
                                      "] us is not inside any model_run of process " + std::to_string(pid));
    }
    for (const auto& [id, n] : flow_starts_)
      if (!flow_ends_.count(id)) add("flow", "flow id " + id + " starts but never finishes");
    for (const auto& [id, n] : flow_ends_)
      if (!flow_starts_.count(id)) add("flow", "flow id " + id + " finishes but never starts");
    return std::move(r_);
  }

  ValidateResult r_;

 private:
  // Where an event is: its position, and its byte offset in a JSON file or
  // its row id in a database.
  std::string where(uint64_t index, uint64_t offset) const {
    return "event #" + std::to_string(index) + (rows_ ? " (row id " : " (byte ") + std::to_string(offset) + ")";
  }
  bool rows_ = false;  // the trace is a database (Event::from_database)

  // Slices of one track must nest: a slice that starts inside another and
  // ends after it is drawn wrongly by every viewer. Sorted by start (the
  // longer first on a tie), each slice is checked against the innermost
  // open one.
  void check_overlaps() {
    std::vector<const Interval*> open;
    for (auto& [track, v] : tracks_) {
      std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
        return a.ts != b.ts ? a.ts < b.ts : a.end > b.end;
      });
      open.clear();
      for (const Interval& cur : v) {
        const double tol = cur.integer ? 1.0 : 2e-3;  // integer µs round each side
        while (!open.empty() && open.back()->end <= cur.ts + tol) open.pop_back();
        if (!open.empty() && cur.end > open.back()->end + tol) {
          const Interval& o = *open.back();
          add("overlap", where(cur.index, cur.offset) + " [" + std::to_string(cur.ts) + ", " + std::to_string(cur.end) +
                             "] us starts inside " + where(o.index, o.offset) + " [" + std::to_string(o.ts) + ", " +
                             std::to_string(o.end) + "] us on track pid " + std::to_string(track.first) + " tid " +
                             std::to_string(track.second) + " and ends after it");
          continue;  // keep the first one open: one report per offender
        }
        open.push_back(&cur);
      }
      v.clear();
      v.shrink_to_fit();
    }
  }

  // ONNX Runtime's plugin-EP link: ort_correlation_id on every GPU event,
  // and the node's event name, op and index as a group when it knew them.
  void ort_device(const Event& e, const std::string& at, const OrtGpuLink& ort) {
    int64_t id = 0;
    const Arg* corr = e.arg("ort_correlation_id");
    if (!corr)
      add("correlation", at + ": ort_* args without an ort_correlation_id");
    else if (!arg_as_int(*corr, &id))
      add("correlation", at + ": ort_correlation_id \"" + std::string(ort.correlation_id) + "\" is not an integer");
    if (ort.partial_group()) {
      add("attribution", at + ": ort_event_name, ort_op_name and ort_node_index come as a group; this event has " +
                             std::string(ort.event_name.empty() ? "" : "ort_event_name ") +
                             (ort.op_name.empty() ? "" : "ort_op_name ") +
                             (ort.node_index.empty() ? "" : "ort_node_index ") + "only");
    } else if (ort.complete_group()) {
      ort_devices_.push_back({e.pid, strings_.intern(ort.event_name), strings_.intern(ort.op_name),
                              strings_.intern(ort.node_index), e.ts, e.index, e.offset});
    } else {
      ++r_.unattributed_device_events;  // ONNX Runtime did not know the node
    }
  }

  // Each named GPU event resolves to the last execution of its node (same
  // name and node_index) that started before it: the one that launched it.
  void resolve_ort_devices() {
    if (ort_devices_.empty()) return;
    for (auto& [k, v] : ort_nodes_)
      std::stable_sort(v.begin(), v.end(), [](const NodeRef& a, const NodeRef& b) { return a.ts < b.ts; });
    auto str = [&](uint32_t id) { return id == kNoString ? std::string("(none)") : strings_.at(id); };
    for (const OrtDeviceRef& d : ort_devices_) {
      const std::string at = where(d.index, d.offset);
      const NodeRef* found = nullptr;
      if (auto it = ort_nodes_.find({d.pid, d.event}); it != ort_nodes_.end()) {
        const auto& v = it->second;
        auto pos = std::upper_bound(v.begin(), v.end(), d.ts, [](double ts, const NodeRef& n) { return ts < n.ts; });
        while (pos != v.begin() && !found) {
          --pos;
          if (pos->node_index == d.node_index) found = &*pos;
        }
      }
      if (!found) {
        add("attribution", at + ": ort_event_name \"" + str(d.event) + "\" with ort_node_index " + str(d.node_index) +
                               " resolves to no node event of process " + std::to_string(d.pid) +
                               " that starts before it");
        ++r_.unattributed_device_events;
      } else if (found->op != d.op) {
        add("attribution", at + ": ort_op_name \"" + str(d.op) + "\" but node event #" +
                               std::to_string(found->index) + " has op_name \"" + str(found->op) + "\"");
      }
    }
  }

  static uint64_t key(int64_t pid, uint64_t corr) { return corr * 0x9E3779B97F4A7C15ull ^ uint64_t(pid); }

  size_t max_;
  bool epprof_ = false;
  StringTable strings_;
  std::map<std::pair<int64_t, int64_t>, double> last_ts_;
  std::unordered_map<uint64_t, HostRef> hosts_;
  std::vector<DeviceRef> devices_;
  std::vector<OrtDeviceRef> ort_devices_;
  std::map<std::pair<int64_t, uint32_t>, std::vector<NodeRef>> ort_nodes_;  // node events by (pid, name)
  std::vector<std::string> devices_without_corr_;
  std::vector<std::string> start_order_, end_order_;
  bool end_order_written_ = false;
  std::map<std::pair<int64_t, int64_t>, double> last_end_;
  std::map<int64_t, std::vector<Interval>> runs_;
  std::map<std::pair<int64_t, int64_t>, std::vector<Interval>> tracks_;  // complete events per (pid, tid)
  std::vector<std::pair<int64_t, Interval>> nodes_;
  std::map<std::string, uint64_t> flow_starts_, flow_ends_;
};

ValidateResult run(const std::function<ReadResult(const EventCallback&)>& read, size_t max_listed) {
  Validator v(max_listed);
  ReadResult rr = read([&](const Event& e, std::string*) { return v.on_event(e); });
  if (!rr.ok) {
    v.add("json", rr.error);
    v.r_.readable = false;
    v.r_.events = rr.events;
    return std::move(v.r_);
  }
  ValidateResult r = v.finish();
  r.events = rr.events;
  return r;
}

}  // namespace

ValidateResult validate_trace(const std::string& path, size_t max_listed) {
  return run([&](const EventCallback& cb) { return read_trace_file(path, cb); }, max_listed);
}

ValidateResult validate_trace_buffer(const std::string& data, size_t max_listed) {
  return run([&](const EventCallback& cb) { return read_trace_buffer(data, cb); }, max_listed);
}

}  // namespace epprof::report
