#include "report/merge.h"


#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "io/atomic_file.h"
#include "report/format.h"
#include "report/reader.h"

namespace epprof::report {
namespace {

struct Scan {
  std::map<int64_t, int64_t> t0;            // pid -> t0_epoch_ns
  std::map<int64_t, std::string> names;      // pid -> process name
  std::set<int64_t> pids;
  uint64_t max_flow_id = 0;
};

bool scan(const std::string& path, Scan* s, std::string* error) {
  ReadResult r = read_trace_file(path, [&](const Event& e, std::string*) {
    if (e.has_pid) s->pids.insert(e.pid);
    if (e.ph == "M" && e.name == "epprof_metadata") {
      int64_t v;
      if (const Arg* a = e.arg("t0_epoch_ns"); a && arg_as_int(*a, &v)) s->t0[e.pid] = v;
    }
    if (e.ph == "M" && e.name == "process_name")
      if (const Arg* a = e.arg("name")) s->names[e.pid] = std::string(a->value);
    if (!e.id.empty()) {
      int64_t id;
      if (arg_as_int(Arg{"id", e.id, ValueKind::kNumber}, &id) && id > 0)
        s->max_flow_id = std::max(s->max_flow_id, uint64_t(id));
    }
    return true;
  });
  if (!r.ok) *error = r.error;
  return r.ok;
}

std::string basename(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// Microseconds with nanosecond precision, no trailing zeros.
std::string micros(double us) {
  std::string s = fixed(us, 3);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// Events in a JSON array, through a 1 MiB buffer; the first write error is
// kept and ends the merge.
class Writer {
 public:
  explicit Writer(io::AtomicFile& file) : file_(file) { buf_ = "[\n"; }
  bool event(const std::string& text) {
    if (!first_) buf_ += ",\n";
    first_ = false;
    buf_ += text;
    return buf_.size() < (size_t(1) << 20) || flush();
  }
  bool close() {
    buf_ += "\n]\n";
    return flush();
  }
  const std::string& error() const { return error_; }

 private:
  bool flush() {
    if (error_.empty() && !file_.write(buf_, &error_)) return false;
    buf_.clear();
    return error_.empty();
  }

  io::AtomicFile& file_;
  std::string buf_, error_;
  bool first_ = true;
};

std::string args_json(const Event& e, const std::map<std::string, std::string>& replace) {
  std::string out = "{";
  bool first = true;
  for (const Arg& a : e.args) {
    if (!first) out += ",";
    first = false;
    out += json_escape(a.key) + ":";
    auto it = replace.find(std::string(a.key));
    if (it != replace.end()) out += it->second;
    else if (a.kind == ValueKind::kString) out += json_escape(a.value);
    else out += std::string(a.value);
  }
  for (const auto& [k, v] : replace) {
    if (e.arg(k)) continue;
    if (!first) out += ",";
    first = false;
    out += json_escape(k) + ":" + v;
  }
  return out + "}";
}

}  // namespace

MergeResult merge_traces(const std::vector<std::string>& paths, const std::string& output) {
  MergeResult res;
  // First, so that an output that is one of the inputs, or cannot be
  // written, is refused before any work.
  std::unique_ptr<io::AtomicFile> file = io::AtomicFile::create(output, &res.error, paths);
  if (!file) return res;
  std::vector<Scan> scans(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!scan(paths[i], &scans[i], &res.error)) return res;
    if (scans[i].t0.empty()) {
      res.error = paths[i] + ": no epprof_metadata record with t0_epoch_ns: cannot align it in time";
      return res;
    }
  }
  res.base_t0_epoch_ns = INT64_MAX;
  for (const Scan& s : scans)
    for (const auto& [pid, t0] : s.t0) res.base_t0_epoch_ns = std::min(res.base_t0_epoch_ns, t0);

  // New pids, process names and flow-id shifts.
  std::set<int64_t> used;
  std::set<std::string> names_used;
  int64_t next_pid = 1;
  for (const Scan& s : scans)
    for (int64_t p : s.pids) next_pid = std::max(next_pid, p < INT64_MAX ? p + 1 : p);
  std::vector<std::map<int64_t, int64_t>> pid_map(paths.size());
  std::vector<std::map<int64_t, std::string>> new_names(paths.size());
  std::vector<uint64_t> id_shift(paths.size(), 0);
  uint64_t shift = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    MergeInput in;
    in.path = paths[i];
    in.t0_epoch_ns = INT64_MAX;
    for (const auto& [pid, t0] : scans[i].t0) in.t0_epoch_ns = std::min(in.t0_epoch_ns, t0);
    for (int64_t p : scans[i].pids) {
      int64_t np = used.count(p) ? next_pid++ : p;
      used.insert(np);
      pid_map[i][p] = np;
      in.pids.emplace_back(p, np);
      auto n = scans[i].names.find(p);
      std::string name = n == scans[i].names.end() ? basename(paths[i]) + " pid " + std::to_string(p) : n->second;
      if (names_used.count(name)) name += " [" + basename(paths[i]) + "]";
      if (names_used.count(name)) name += " #" + std::to_string(i + 1);
      names_used.insert(name);
      new_names[i][p] = name;
    }
    id_shift[i] = shift;
    shift += scans[i].max_flow_id + 1;
    res.inputs.push_back(in);
  }

  Writer w(*file);
  std::string text;
  for (size_t i = 0; i < paths.size(); ++i) {
    const Scan& sc = scans[i];
    std::set<int64_t> named;
    ReadResult r = read_trace_file(paths[i], [&](const Event& e, std::string*) {
      const int64_t pid = e.has_pid ? pid_map[i][e.pid] : 0;
      auto t0 = sc.t0.find(e.pid);
      const int64_t my_t0 = t0 != sc.t0.end() ? t0->second : res.inputs[i].t0_epoch_ns;
      const double offset_us = double(my_t0 - res.base_t0_epoch_ns) / 1000.0;
      std::map<std::string, std::string> replace;
      const bool metadata = e.ph == "M";
      if (metadata && e.name == "process_name") {
        replace["name"] = json_escape(new_names[i][e.pid]);
        named.insert(e.pid);
      }
      if (metadata && e.name == "epprof_metadata") {
        replace["t0_epoch_ns"] = "\"" + std::to_string(res.base_t0_epoch_ns) + "\"";
        replace["t0_epoch_ns_original"] = "\"" + std::to_string(my_t0) + "\"";
        replace["merged_from"] = json_escape(paths[i]);
      }
      text = "{";
      if (e.has_cat) text += "\"cat\":" + json_escape(e.cat) + ",";
      if (e.has_name) text += "\"name\":" + json_escape(e.name) + ",";
      if (e.has_pid) text += "\"pid\":" + std::to_string(pid) + ",";
      if (e.has_tid) text += "\"tid\":" + std::to_string(e.tid) + ",";
      if (e.has_ts) text += "\"ts\":" + (metadata ? std::string(e.ts_raw) : micros(e.ts + offset_us)) + ",";
      if (e.has_dur) text += "\"dur\":" + std::string(e.dur_raw) + ",";
      if (e.has_ph) text += "\"ph\":" + json_escape(e.ph) + ",";
      for (const Arg& x : e.extra) {
        std::string v(x.value);
        int64_t id;
        if (x.key == "id" && arg_as_int(Arg{"id", x.value, ValueKind::kNumber}, &id))
          v = std::to_string(uint64_t(id) + id_shift[i]);
        text += json_escape(x.key) + ":" + v + ",";
      }
      // Non-object "args" (not ours, but kept as is) went out with the extras.
      bool args_in_extra = false;
      for (const Arg& x : e.extra) args_in_extra = args_in_extra || x.key == "args";
      if (!args_in_extra) text += "\"args\":" + args_json(e, replace);
      else if (text.back() == ',') text.pop_back();
      text += "}";
      res.events++;
      return w.event(text);
    });
    if (!w.error().empty()) {
      res.error = w.error();
      return res;
    }
    if (!r.ok) {
      res.error = r.error;
      return res;
    }
    // Every process gets a name, so they stay told apart.
    for (const auto& [old_pid, name] : new_names[i]) {
      if (named.count(old_pid)) continue;
      res.events++;
      if (!w.event("{\"cat\":\"__metadata\",\"name\":\"process_name\",\"pid\":" +
                   std::to_string(pid_map[i][old_pid]) + ",\"tid\":0,\"ts\":0,\"ph\":\"M\",\"args\":{\"name\":" +
                   json_escape(name) + "}}")) {
        res.error = w.error();
        return res;
      }
    }
  }
  if (!w.close() || !file->commit(&res.error)) {
    if (res.error.empty()) res.error = w.error();
    return res;
  }
  for (size_t i = 0; i < paths.size(); ++i)
    res.inputs[i].offset_ns = res.inputs[i].t0_epoch_ns - res.base_t0_epoch_ns;
  res.ok = true;
  return res;
}

}  // namespace epprof::report
