// The epprof command line: one file per subcommand, registered in the table
// in main.cpp. Each subcommand gets argv after its own name and returns the
// process exit code (kExitOk, kExitError, kExitUsage).
#pragma once

#include <cstdint>
#include <string>

namespace epprof::cli {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;  // the work failed (message on stderr)
constexpr int kExitUsage = 2;  // bad command line (message on stderr)

// One subcommand: `epprof <name> ...`.
struct Command {
  const char* name;
  const char* summary;                  // one line for `epprof --help`
  int (*run)(int argc, char** argv);    // argv[0] is the subcommand name
};

int run_demo(int argc, char** argv);
int run_run(int argc, char** argv);
int run_report(int argc, char** argv);
int run_diff(int argc, char** argv);
int run_validate(int argc, char** argv);
int run_merge(int argc, char** argv);
int run_counters(int argc, char** argv);

// Prints "epprof <command>: <message>" and a hint to stderr; returns kExitUsage.
int usage_error(const char* command, const std::string& message);

// Parses a decimal integer in [min, max]; false if `text` is not one.
bool parse_int(const char* text, int64_t min, int64_t max, int64_t* out);

// The directory holding this executable ("" if unknown).
std::string executable_dir();

}  // namespace epprof::cli
