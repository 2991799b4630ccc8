// `epprof diff A B`: per-op and per-node changes from trace A to trace B.
#include <cstdio>
#include <string>

#include "cli.h"
#include "report/format.h"
#include "report/report.h"
#include "report/trace_model.h"
#include "trace_progress.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "diff";

void print_help() {
  std::printf(
      "usage: epprof diff A B [options]\n"
      "\n"
      "Compares two traces (epprof or ONNX Runtime) per op and per node. For each\n"
      "key it takes the time per measured model_run (the sum of its node slices in\n"
      "that run), and prints the mean per run in A and in B, the change B - A (us and\n"
      "%%), sorted by absolute change. A change is flagged significant when it is\n"
      "larger than its noise: two standard errors of the difference of the means,\n"
      "from the run-to-run spread of each trace. With fewer than two measured runs\n"
      "on a side, significance is 'unknown'. A key absent from one trace counts as 0\n"
      "there. A trace without model_run events counts as one run.\n"
      "\n"
      "options:\n"
      "  --by KEYS       comma-separated tables: op, node, provider, kernel (default op,node)\n"
      "  --format FMT    text (default), csv or json\n"
      "  --top N         only the N largest changes per table\n"
      "  --skip-runs N   leave out the first N model_runs of each process\n"
      "                  (default: each trace's warm-up count)\n"
      "  -h, --help      show this help\n"
      "\n"
      "Exit status: 0 on success, 1 if a trace cannot be read, 2 for a bad command line.\n");
}

bool load(const std::string& path, int skip, report::Trace* t) {
  TraceProgress progress("reading " + path);
  report::LoadOptions lo;
  lo.skip_runs = skip;
  lo.progress = progress.callback();
  std::string error;
  if (report::load_trace(path, lo, t, &error)) return true;
  std::fprintf(stderr, "epprof diff: %s\n", error.c_str());
  return false;
}

}  // namespace

int run_diff(int argc, char** argv) {
  std::vector<std::string> files;
  std::vector<report::GroupBy> by = {report::GroupBy::kOp, report::GroupBy::kNode};
  report::Format format = report::Format::kText;
  int64_t top = 0, skip = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "-h" || a == "--help") {
      print_help();
      return kExitOk;
    } else if (a == "--by") {
      if (!v) return usage_error(kCommand, "--by needs a list, e.g. op,node");
      by.clear();
      std::string s = v;
      size_t start = 0;
      for (;;) {
        size_t comma = s.find(',', start);
        report::GroupBy g;
        if (!report::parse_group(s.substr(start, comma - start), &g))
          return usage_error(kCommand, "--by: unknown table '" + s.substr(start, comma - start) + "'");
        by.push_back(g);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      ++i;
    } else if (a == "--format") {
      if (!v || !report::parse_format(v, &format) || format == report::Format::kHtml)
        return usage_error(kCommand, "--format needs text, csv or json");
      ++i;
    } else if (a == "--top") {
      if (!v || !parse_int(v, 1, 1000000000, &top)) return usage_error(kCommand, "--top needs a positive integer");
      ++i;
    } else if (a == "--skip-runs") {
      if (!v || !parse_int(v, 0, 1000000000, &skip)) return usage_error(kCommand, "--skip-runs needs an integer >= 0");
      ++i;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else {
      files.push_back(a);
    }
  }
  if (files.size() != 2) return usage_error(kCommand, "needs exactly two traces, A and B");
  report::Trace ta, tb;
  if (!load(files[0], int(skip), &ta) || !load(files[1], int(skip), &tb)) return kExitError;
  std::string out;
  if (format == report::Format::kJson) out += "{";
  for (size_t i = 0; i < by.size(); ++i) {
    auto rows = report::diff_series(report::run_series(ta, by[i]), report::run_series(tb, by[i]));
    if (top && rows.size() > size_t(top)) rows.resize(size_t(top));
    const std::string name = report::group_name(by[i]);
    if (format == report::Format::kJson) {
      out += std::string(i ? "," : "") + "\"" + name + "\":";
    } else if (i) {
      out += "\n";
    }
    const std::string title = format == report::Format::kText ? "by " + name + " (us per run, " + files[0] +
                                                                   " -> " + files[1] + ")"
                                                             : name;
    report::write_diff(rows, title, format, &out);
  }
  if (format == report::Format::kJson) out += "}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitError;
}

}  // namespace epprof::cli
