// epprof: the command line. Dispatches `epprof <command> [options]` to one
// subcommand per file (cmd_<name>.cpp). To add one, write its run function,
// declare it in cli.h and add a row to kCommands.
#include <cstdio>
#include <cstring>

#include "cli.h"
#include "epprof/epprof.h"

namespace {

using epprof::cli::Command;

constexpr Command kCommands[] = {
#ifdef EPPROF_CLI_HAS_RUNTIME
    {"run", "run an ONNX model in the reference runtime and profile it (the main job)",
     epprof::cli::run_run},
#endif
    {"demo", "profile a multi-threaded demo workload with the example plugin",
     epprof::cli::run_demo},
    {"report", "summary tables (text, csv, json, html) of a trace or ONNX Runtime profile",
     epprof::cli::run_report},
    {"diff", "per-op and per-node changes between two traces", epprof::cli::run_diff},
    {"validate", "check a trace against the format contract; list violations",
     epprof::cli::run_validate},
    {"merge", "merge traces of several processes, aligned by their T0", epprof::cli::run_merge},
    {"convert", "convert a trace between JSON and the SQLite trace database", epprof::cli::run_convert},
    {"counters", "list the counters this machine offers; check a set's pass plan",
     epprof::cli::run_counters},
    {"capture", "profile the next runs of a running process (its capture listener)",
     epprof::cli::run_capture},
};

void print_help(FILE* out) {
  std::fprintf(out,
               "usage: epprof <command> [options]\n"
               "       epprof --help | --version\n"
               "\n"
               "epprof is a correlated host/device profiler for ML inference runtimes.\n"
               "\n"
               "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\nRun 'epprof <command> --help' for the options of a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help(stderr);
    return epprof::cli::kExitUsage;
  }
  const char* name = argv[1];
  if (std::strcmp(name, "--help") == 0 || std::strcmp(name, "-h") == 0 ||
      std::strcmp(name, "help") == 0) {
    print_help(stdout);
    return epprof::cli::kExitOk;
  }
  if (std::strcmp(name, "--version") == 0) {
    std::printf("epprof %s\n", epprof_version());
    return epprof::cli::kExitOk;
  }
  // `run` asks for kFinishCurrentWork itself; every other command stops at once.
  epprof::cli::install_signal_handlers(epprof::cli::SignalMode::kStopAtOnce);
  for (const Command& c : kCommands) {
    if (std::strcmp(name, c.name) == 0) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "epprof: unknown command '%s'\nTry 'epprof --help'.\n", name);
  return epprof::cli::kExitUsage;
}
