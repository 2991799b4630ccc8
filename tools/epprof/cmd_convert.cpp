// `epprof convert IN OUT`: a trace between JSON and the SQLite database.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "report/event_output.h"
#include "report/reader.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "convert";

void print_help() {
  std::printf(
      "usage: epprof convert IN OUT [options]\n"
      "\n"
      "Converts a trace between Chrome trace JSON (epprof's, or an ONNX Runtime\n"
      "profile) and epprof's SQLite trace database. The input's format is read from\n"
      "its first bytes; the output's is chosen by its extension (.db, .sqlite or\n"
      ".sqlite3: a database; anything else: JSON) unless --format says. Every event\n"
      "is kept: those the database has no table for are stored as their JSON text\n"
      "(other_events) and come back unchanged. The database's schema and example\n"
      "queries are in README.md.\n"
      "\n"
      "options:\n"
      "  --format FMT         json or sqlite (default: by OUT's extension)\n"
      "  --timestamps MODE    JSON output: integer (default) writes ts and dur in\n"
      "                       integer microseconds, as ONNX Runtime does; a slice\n"
      "                       shorter than 1 us is written 1 us long with its exact\n"
      "                       length in a \"dur_ns\" arg. fractional writes them as\n"
      "                       read: exact nanoseconds from a database.\n"
      "  -h, --help           show this help\n"
      "\n"
      "OUT is written to a temporary file and renamed, so a failed conversion leaves\n"
      "nothing behind; OUT may not be IN, a directory, device, FIFO or socket.\n"
      "\n"
      "Exit status: 0 on success, 1 if IN cannot be read or OUT cannot be written,\n"
      "2 for a bad command line.\n");
}

}  // namespace

int run_convert(int argc, char** argv) {
  std::vector<std::string> paths;
  report::OutputOptions options;
  options.integer_timestamps = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      print_help();
      return kExitOk;
    } else if (a == "--format" || a == "--timestamps") {
      if (i + 1 >= argc) return usage_error(kCommand, a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--format" && v == "json") options.format = report::OutputFormat::kJson;
      else if (a == "--format" && v == "sqlite") options.format = report::OutputFormat::kDatabase;
      else if (a == "--timestamps" && (v == "integer" || v == "fractional")) options.integer_timestamps = v == "integer";
      else return usage_error(kCommand, "unknown " + a + " '" + v + "'");
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else {
      paths.push_back(a);
    }
  }
  if (paths.size() != 2) return usage_error(kCommand, "give an input and an output trace");
  std::string error;
  std::unique_ptr<report::EventOutput> out = report::EventOutput::create(paths[1], {paths[0]}, options, &error);
  if (!out) {
    std::fprintf(stderr, "epprof convert: %s\n", error.c_str());
    return kExitError;
  }
  const report::ReadResult r =
      report::read_trace_file(paths[0], [&](const report::Event& e, std::string*) { return out->add(e); });
  if (!r.ok || !out->error().empty() || !out->finish()) {
    std::fprintf(stderr, "epprof convert: %s\n", (!r.ok ? r.error : out->error()).c_str());
    return kExitError;
  }
  std::printf("%s: %llu events -> %s (%s)\n", paths[0].c_str(), (unsigned long long)r.events, paths[1].c_str(),
              out->database() ? "SQLite database" : "JSON");
  return kExitOk;
}

}  // namespace epprof::cli
