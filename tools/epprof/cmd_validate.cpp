// `epprof validate TRACE`: checks a trace against the format contract.
#include <cstdio>
#include <string>

#include "cli.h"
#include "report/validate.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "validate";

void print_help() {
  std::printf(
      "usage: epprof validate TRACE [options]\n"
      "\n"
      "Checks a trace (epprof or ONNX Runtime) and lists every violation:\n"
      "  json               the file is not a readable trace, or any byte of it is not\n"
      "                     valid JSON (byte offset, event index)\n"
      "  required-field     cat, name, ph on every event; pid, tid, ts, dur on complete\n"
      "                     (\"X\") events; pid, ts and id on flow events\n"
      "  correlation        a device event (cat Kernel/Memcpy) whose correlation_id\n"
      "                     resolves to no host event of its process (events marked\n"
      "                     \"unattributed\" are exempt; in epprof traces every device\n"
      "                     event needs one), a host id used twice, or an ONNX Runtime\n"
      "                     plugin-EP GPU event whose ort_correlation_id is missing or\n"
      "                     not an integer\n"
      "  attribution        a device event whose parent_name, op_name or node_index\n"
      "                     differs from its host event's; an ONNX Runtime plugin-EP\n"
      "                     GPU event whose ort_event_name / ort_node_index names no\n"
      "                     node event before it, whose ort_op_name differs from that\n"
      "                     node's op_name, or that has only part of that group\n"
      "  negative-duration  dur < 0\n"
      "  track-order        complete events of one track (pid, tid) not written in time\n"
      "                     order (epprof traces only: ONNX Runtime writes events as\n"
      "                     they end)\n"
      "  nesting            a node event outside every model_run of its process\n"
      "  overlap            two complete events of one track (pid, tid) that overlap\n"
      "                     without one containing the other\n"
      "  flow               a flow start without a finish, or the reverse\n"
      "\n"
      "options:\n"
      "  --max N      list at most N violations (default 1000; all are counted)\n"
      "  -q, --quiet  print only the summary line\n"
      "  -h, --help   show this help\n"
      "\n"
      "Exit status: 0 when the trace is clean, 1 when it has violations or cannot\n"
      "be read, 2 for a bad command line.\n");
}

}  // namespace

int run_validate(int argc, char** argv) {
  std::string path;
  int64_t max = 1000;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      print_help();
      return kExitOk;
    } else if (a == "--max") {
      if (i + 1 >= argc || !parse_int(argv[i + 1], 0, 1000000000, &max))
        return usage_error(kCommand, "--max needs an integer >= 0");
      ++i;
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else if (path.empty()) {
      path = a;
    } else {
      return usage_error(kCommand, "more than one trace given");
    }
  }
  if (path.empty()) return usage_error(kCommand, "no trace given");
  const report::ValidateResult r = report::validate_trace(path, size_t(max));
  if (!quiet)
    for (const report::Violation& v : r.violations) std::printf("%s: %s\n", v.kind.c_str(), v.message.c_str());
  if (r.unattributed_device_events)
    std::printf("%s: %llu device event%s attributed to no node (ort_correlation_id only, or unresolved)\n",
                path.c_str(), (unsigned long long)r.unattributed_device_events,
                r.unattributed_device_events == 1 ? "" : "s");
  if (r.total() == 0) {
    std::printf("%s: valid (%llu events)\n", path.c_str(), (unsigned long long)r.events);
    return kExitOk;
  }
  std::string kinds;
  for (const auto& [k, n] : r.counts) kinds += (kinds.empty() ? "" : ", ") + k + " " + std::to_string(n);
  std::printf("%s: %llu violation%s (%s)%s\n", path.c_str(), (unsigned long long)r.total(), r.total() == 1 ? "" : "s",
              kinds.c_str(), r.total() > r.violations.size() && !quiet ? "; not all listed, see --max" : "");
  return kExitError;
}

}  // namespace epprof::cli
