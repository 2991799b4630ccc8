// The epprof command line: one file per subcommand, registered in the table
// in main.cpp. Each subcommand gets argv after its own name and returns the
// process exit code (kExitOk, kExitError, kExitUsage).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
int run_convert(int argc, char** argv);
int run_counters(int argc, char** argv);
int run_capture(int argc, char** argv);

// Prints "epprof <command>: <message>" and a hint to stderr; returns kExitUsage.
int usage_error(const char* command, const std::string& message);

// Parses a decimal integer in [min, max]; false if `text` is not one.
bool parse_int(const char* text, int64_t min, int64_t max, int64_t* out);

// The items of a comma-separated list, empty ones included ("a,,b": three).
std::vector<std::string> split_list(const std::string& s);

// The directory holding this executable ("" if unknown).
std::string executable_dir();

// SIGINT, SIGTERM and SIGHUP for the commands that run long. Files are
// written through io::AtomicFile, whose temporaries have no name until
// committed, so exiting at once never leaves one behind; the handler runs
// on the main thread (another thread passes the signal on), which blocks
// signals while it renames a file into place, and removes the named
// temporaries of the fallback (no O_TMPFILE) before it exits.
//  - kStopAtOnce (report, diff, validate, merge): the first signal exits
//    with 128 + signal.
//  - kFinishCurrentWork (run): the first signal is recorded and returned by
//    pending_signal(); the command finishes its current unit of work, writes
//    what completed and exits with signal_exit_code(). A second signal exits
//    at once with 128 + signal.
// A signal ignored when the process started (e.g. SIGINT of a background
// job) stays ignored.
enum class SignalMode { kStopAtOnce, kFinishCurrentWork };
void install_signal_handlers(SignalMode mode);
int pending_signal();  // 0 if none
inline int signal_exit_code(int sig) { return 128 + sig; }

}  // namespace epprof::cli
