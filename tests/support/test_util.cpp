#include "support/test_util.h"

#include <sys/wait.h>

#include <cstdio>

namespace epprof::testing {

std::vector<TraceEvent> read_trace(const std::string& path) {
  std::vector<TraceEvent> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  auto err = parser.load(path).get(doc);
  EXPECT_EQ(err, simdjson::SUCCESS) << path << ": " << simdjson::error_message(err);
  if (err) return out;
  simdjson::dom::array arr;
  EXPECT_EQ(doc.get(arr), simdjson::SUCCESS) << "the trace is not a JSON array";
  for (simdjson::dom::element item : arr) {
    TraceEvent e;
    std::string_view sv;
    EXPECT_EQ(item["cat"].get(sv), simdjson::SUCCESS) << "an event lacks cat";
    e.cat = sv;
    EXPECT_EQ(item["name"].get(sv), simdjson::SUCCESS) << "an event lacks name";
    e.name = sv;
    EXPECT_EQ(item["ph"].get(sv), simdjson::SUCCESS) << "an event lacks ph";
    e.ph = sv;
    EXPECT_EQ(item["pid"].get(e.pid), simdjson::SUCCESS) << "an event lacks pid";
    EXPECT_EQ(item["tid"].get(e.tid), simdjson::SUCCESS) << "an event lacks tid";
    EXPECT_EQ(item["ts"].get(e.ts), simdjson::SUCCESS) << "an event lacks ts";
    if (item["dur"].get(e.dur) == simdjson::SUCCESS) e.has_dur = true;
    uint64_t id;
    if (item["id"].get(id) == simdjson::SUCCESS) e.flow_id = id;
    simdjson::dom::object args;
    if (item["args"].get(args) == simdjson::SUCCESS) {
      e.args_json = simdjson::minify(args);
      for (auto field : args) {
        if (field.value.get(sv) == simdjson::SUCCESS) e.args.emplace_back(field.key, sv);
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::map<std::string, std::string> plugin_metadata(const std::vector<TraceEvent>& trace, const std::string& plugin) {
  std::map<std::string, std::string> out;
  for (const auto& e : trace) {
    if (e.cat != "Metadata" || e.name != "epprof_metadata") continue;
    simdjson::dom::parser parser;
    simdjson::dom::element args;
    if (parser.parse(e.args_json).get(args)) continue;
    simdjson::dom::object fields;
    if (args["plugins"][plugin].get(fields)) continue;
    for (auto field : fields) {
      std::string_view v;
      if (!field.value.get(v)) out[std::string(field.key)] = std::string(v);
    }
  }
  return out;
}

ShellResult run_shell(const std::string& command) {
  ShellResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace epprof::testing
