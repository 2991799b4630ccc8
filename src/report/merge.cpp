#include "report/merge.h"


#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "report/event_output.h"
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

}  // namespace

MergeResult merge_traces(const std::vector<std::string>& paths, const std::string& output) {
  MergeResult res;
  // First, so that an output that is one of the inputs, or cannot be
  // written, is refused before any work.
  std::unique_ptr<EventOutput> out = EventOutput::create(output, paths, {}, &res.error);
  if (!out) return res;
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

  for (size_t i = 0; i < paths.size(); ++i) {
    const Scan& sc = scans[i];
    std::set<int64_t> named;
    ReadResult r = read_trace_file(paths[i], [&](const Event& e, std::string*) {
      auto t0 = sc.t0.find(e.pid);
      const int64_t my_t0 = t0 != sc.t0.end() ? t0->second : res.inputs[i].t0_epoch_ns;
      std::map<std::string, std::string> replace;
      if (e.ph == "M" && e.name == "process_name") {
        replace["name"] = json_escape(new_names[i][e.pid]);
        named.insert(e.pid);
      }
      if (e.ph == "M" && e.name == "epprof_metadata") {
        replace["t0_epoch_ns"] = "\"" + std::to_string(res.base_t0_epoch_ns) + "\"";
        replace["t0_epoch_ns_original"] = "\"" + std::to_string(my_t0) + "\"";
        replace["merged_from"] = json_escape(paths[i]);
      }
      EventEdit edit;
      edit.set_pid = e.has_pid;
      edit.pid = e.has_pid ? pid_map[i][e.pid] : 0;
      edit.ts_offset_us = double(my_t0 - res.base_t0_epoch_ns) / 1000.0;
      edit.id_shift = id_shift[i];
      edit.replace_args = &replace;
      res.events++;
      return out->add(e, &edit);
    });
    if (!out->error().empty()) {
      res.error = out->error();
      return res;
    }
    if (!r.ok) {
      res.error = r.error;
      return res;
    }
    // Every process gets a name, so they stay told apart.
    for (const auto& [old_pid, name] : new_names[i]) {
      if (named.count(old_pid)) continue;
      const std::string text = "[{\"cat\":\"__metadata\",\"name\":\"process_name\",\"pid\":" +
                               std::to_string(pid_map[i][old_pid]) +
                               ",\"tid\":0,\"ts\":0,\"ph\":\"M\",\"args\":{\"name\":" + json_escape(name) + "}}]";
      read_trace_buffer(text, [&](const Event& e, std::string*) { return out->add(e); });
      res.events++;
      if (!out->error().empty()) {
        res.error = out->error();
        return res;
      }
    }
  }
  if (!out->finish()) {
    res.error = out->error();
    return res;
  }
  for (size_t i = 0; i < paths.size(); ++i)
    res.inputs[i].offset_ns = res.inputs[i].t0_epoch_ns - res.base_t0_epoch_ns;
  res.ok = true;
  return res;
}

}  // namespace epprof::report
