// `epprof report TRACE`: summary tables of an epprof trace or an ONNX
// Runtime profile, as text, CSV, JSON or a self-contained HTML page.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "cli.h"
#include "io/atomic_file.h"
#include "report/format.h"
#include "report/memory_report.h"
#include "report/report.h"
#include "report/trace_model.h"
#include "trace_progress.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "report";

void print_help() {
  std::printf(
      "usage: epprof report TRACE [options]\n"
      "\n"
      "Summarises a trace written by epprof, or a profile written by ONNX Runtime\n"
      "(a JSON array of events, or an object with \"traceEvents\").\n"
      "\n"
      "Tables (durations in microseconds):\n"
      "  by op|node|provider|kernel: count, total, mean, p50, p90, p99 and %% of the\n"
      "      measured model_run time. Node tables use the Node events (ONNX Runtime's\n"
      "      fence events are left out); the kernel table uses device events (cat\n"
      "      Kernel or Memcpy). Percentiles are nearest-rank over the individual\n"
      "      slices of all measured runs (for --by node: one slice per run).\n"
      "  host vs device time per node: a device event counts for the node whose\n"
      "      correlation_id it carries (or, without one, its parent_name).\n"
      "  counters per op, when the trace has any: numeric args of node events that\n"
      "      are not descriptive (op_name, sizes, shapes, ...) and \"ph\":\"C\" counter\n"
      "      events, attributed by correlation_id or to the node running on that\n"
      "      thread at that time.\n"
      "  --by memory, for a trace recorded with memory profiling (epprof run\n"
      "      --memory): per device the peak, the bytes in use at the end and the\n"
      "      leak line (bytes still live at the end that were allocated inside a\n"
      "      model_run, weights apart); each measured run's peak and the node\n"
      "      running then; the top allocating ops; activation bytes per node (what\n"
      "      a node allocated and still held when it ended: its outputs). Bytes.\n"
      "      --top does not apply; with --format html the page is the usual one,\n"
      "      whose timeline draws the memory-in-use track.\n"
      "Warm-up runs (the \"warmup\" field of the epprof_metadata record) are left out.\n"
      "\n"
      "options:\n"
      "  --by KEY           op (default), node, provider, kernel or memory\n"
      "  --format FMT       text (default), csv, json or html\n"
      "  --top N            only the N rows with the largest total (default: all)\n"
      "  --skip-runs N      leave out the first N model_runs of each process\n"
      "                     (default: the trace's warm-up count, 0 if none)\n"
      "  -o, --output PATH  write to PATH instead of standard output; a regular file\n"
      "                     there is replaced once the output is complete\n"
      "  -h, --help         show this help\n"
      "\n"
      "Progress is shown on stderr for traces that take over a second, when\n"
      "stderr is a terminal.\n"
      "\n"
      "Exit status: 0 on success, 1 if the trace cannot be read (the message\n"
      "names the byte offset or event index), 2 for a bad command line.\n");
}

struct Options {
  std::string trace, output;
  report::GroupBy by = report::GroupBy::kOp;
  bool memory = false;  // --by memory
  report::Format format = report::Format::kText;
  int64_t top = 0;
  int64_t skip_runs = -1;
};

}  // namespace

int run_report(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "-h" || a == "--help") {
      print_help();
      return kExitOk;
    } else if (a == "--by") {
      if (v && std::string(v) == "memory")
        o.memory = true;
      else if (!v || !report::parse_group(v, &o.by))
        return usage_error(kCommand, "--by needs op, node, provider, kernel or memory");
      ++i;
    } else if (a == "--format") {
      if (!v || !report::parse_format(v, &o.format)) return usage_error(kCommand, "--format needs text, csv, json or html");
      ++i;
    } else if (a == "--top") {
      if (!v || !parse_int(v, 1, 1000000000, &o.top)) return usage_error(kCommand, "--top needs a positive integer");
      ++i;
    } else if (a == "--skip-runs") {
      if (!v || !parse_int(v, 0, 1000000000, &o.skip_runs)) return usage_error(kCommand, "--skip-runs needs an integer >= 0");
      ++i;
    } else if (a == "-o" || a == "--output") {
      if (!v || !*v) return usage_error(kCommand, a + " needs a path");
      o.output = v;
      ++i;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else if (o.trace.empty()) {
      o.trace = a;
    } else {
      return usage_error(kCommand, "more than one trace given ('" + o.trace + "' and '" + a + "')");
    }
  }
  if (o.trace.empty()) return usage_error(kCommand, "no trace given");

  // Opened first, so that a bad output path is refused before the trace is
  // read; the file appears only once it is complete.
  std::string error;
  std::unique_ptr<io::AtomicFile> file;
  if (!o.output.empty() && !(file = io::AtomicFile::create(o.output, &error, {o.trace}))) {
    std::fprintf(stderr, "epprof report: %s\n", error.c_str());
    return kExitError;
  }
  report::Trace trace;
  {
    TraceProgress progress("reading " + o.trace);
    report::LoadOptions lo;
    lo.skip_runs = int(o.skip_runs);
    lo.progress = progress.callback();
    lo.keep_others = lo.keep_flows = o.format == report::Format::kHtml;
    lo.keep_others = lo.keep_others || o.memory;  // the memory tracks' samples
    if (!report::load_trace(o.trace, lo, &trace, &error)) {
      std::fprintf(stderr, "epprof report: %s\n", error.c_str());
      return kExitError;
    }
  }
  std::string out;
  if (o.memory && o.format != report::Format::kHtml) {
    report::write_memory_report(report::build_memory_report(trace), o.trace, o.format, &out);
  } else {
  report::ReportOptions ro;
  ro.by = o.by;
  ro.top = size_t(o.top);
  report::Report rep = report::build_report(trace, ro);
  rep.source = o.trace;
  if (o.format == report::Format::kHtml)
    report::write_html(trace, rep, &out);
  else
    report::write_report(rep, o.format, &out);
  }

  if (file) {
    if (!file->write(out, &error) || !file->commit(&error)) {
      std::fprintf(stderr, "epprof report: %s\n", error.c_str());
      return kExitError;
    }
    return kExitOk;
  }
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "epprof report: cannot write to standard output: %s\n", std::strerror(errno));
    return kExitError;
  }
  return kExitOk;
}

}  // namespace epprof::cli
