// `epprof merge A B ... -o OUT`: traces of several processes in one timeline.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "report/merge.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "merge";

void print_help() {
  std::printf(
      "usage: epprof merge TRACE TRACE... -o OUT\n"
      "\n"
      "Merges epprof traces written by different processes into one trace. Each\n"
      "trace's timestamps are shifted by the difference between its T0 (the\n"
      "t0_epoch_ns field of its epprof_metadata record) and the earliest T0, so\n"
      "the traces line up in wall-clock time; the merged trace's metadata records\n"
      "carry that earliest T0 (the original one is kept as t0_epoch_ns_original).\n"
      "A process id already used by an earlier input is renumbered, a process name\n"
      "already used gets ' [<file name>]' appended, and flow ids are shifted so they\n"
      "stay unique. Correlation ids are per process and need no change.\n"
      "\n"
      "options:\n"
      "  -o, --output PATH  the merged trace (required); written to a temporary file\n"
      "                     and renamed, so a failed merge leaves no partial file\n"
      "  -h, --help         show this help\n"
      "\n"
      "Exit status: 0 on success, 1 if an input cannot be read or has no T0, or the\n"
      "output cannot be written, 2 for a bad command line.\n");
}

}  // namespace

int run_merge(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string output;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      print_help();
      return kExitOk;
    } else if (a == "-o" || a == "--output") {
      if (i + 1 >= argc || !*argv[i + 1]) return usage_error(kCommand, a + " needs a path");
      output = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) return usage_error(kCommand, "no traces given");
  if (output.empty()) return usage_error(kCommand, "no output given (-o OUT)");
  const report::MergeResult r = report::merge_traces(inputs, output);
  if (!r.ok) {
    std::fprintf(stderr, "epprof merge: %s\n", r.error.c_str());
    return kExitError;
  }
  for (const report::MergeInput& in : r.inputs) {
    std::printf("%s: offset %+.3f us, pids", in.path.c_str(), double(in.offset_ns) / 1000.0);
    for (const auto& [from, to] : in.pids) {
      if (from == to) std::printf(" %lld", (long long)from);
      else std::printf(" %lld->%lld", (long long)from, (long long)to);
    }
    std::printf("\n");
  }
  std::printf("merged %zu traces, %llu events, T0 %lld ns: %s\n", r.inputs.size(), (unsigned long long)r.events,
              (long long)r.base_t0_epoch_ns, output.c_str());
  return kExitOk;
}

}  // namespace epprof::cli
