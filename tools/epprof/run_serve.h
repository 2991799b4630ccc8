// `epprof run --serve`: the reference runtime as an inference server that
// can be captured while it runs (epprof/capture.h). It runs the model back
// to back until SIGINT/SIGTERM/SIGHUP with a capture listener open, and
// profiles nothing until `epprof capture PID` asks: then the next runs get
// a per-run observer (rt::ProfilingObserver through RunOptions::observer),
// which writes the trace and is dropped. How a real server embeds it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "epprof/epprof.h"
#include "epprof/rt/session.h"

namespace epprof::cli {

struct ServeOptions {
  std::string model;                     // for the trace metadata and the banner
  std::vector<epprof_plugin_t> plugins;  // EP profilers each capture gets
  bool integer_timestamps = true;
  std::vector<std::string> inputs;       // files the command reads: no trace may be one
  std::string socket_dir;                // empty: the listener's default
  int warmup = 1;                        // unprofiled runs before the listener opens
  int pause_ms = 0;                      // sleep between runs (a server waiting for work)
};

// Returns the exit code: 0 when stopped by a signal, 1 when a run failed or
// the listener could not start (message on stderr).
int serve_captures(rt::Session& session, const std::map<std::string, rt::Tensor>& inputs, const ServeOptions& o);

}  // namespace epprof::cli
