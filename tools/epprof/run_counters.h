// `epprof run --counters LIST [--replay MODE]`: per-dispatch counters through
// a libepprof session, fed by the runtime's ProfilingObserver with
// ProfilingOptions::sessions; values printed per op and written onto the
// node events of the run's trace.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "epprof/epprof.h"

namespace epprof::cli {

struct CounterOptions {
  std::vector<std::string> names;  // empty: no counters
  epprof_replay_mode replay = EPPROF_REPLAY_KERNEL;
  bool replay_given = false;
};

// Consumes argv[i] (and its value) when it is --counters or --replay:
// returns 1 when consumed, 0 when not ours, or -1 after printing a usage
// error (the caller exits with kExitUsage).
int parse_counter_option(int argc, char** argv, int& i, CounterOptions& o);
// Checks the parsed options together; -1 after a usage error.
int check_counter_options(const CounterOptions& o);
// Help lines for the two options.
const char* counter_options_help();

class RunCounters {
 public:
  // Creates the counter configuration (device "cpu") and an active session.
  // The run's observer feeds it (ProfilingOptions::sessions). Throws
  // rt::Error with libepprof's message (unknown counter, unsupported here).
  explicit RunCounters(const CounterOptions& o);
  ~RunCounters();
  RunCounters(const RunCounters&) = delete;
  RunCounters& operator=(const RunCounters&) = delete;

  // How many times the whole workload must run: the number of passes for
  // APPLICATION replay, else 1.
  int workload_passes() const;
  // Around each workload run (APPLICATION replay opens pass `pass`).
  void begin_pass(int pass);
  void end_pass();
  // Stops the session; call after the last run.
  void finish();
  // The per-op table over the measured runs: runs_per_pass = warmup + runs
  // of one workload run; the first `warmup` of each are left out.
  void print(FILE* out, int warmup, int runs_per_pass) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace epprof::cli
