#include "run_serve.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>

#include "cli.h"
#include "epprof/rt/error.h"
#include "epprof/rt/profiling.h"
#include "io/atomic_file.h"

namespace epprof::cli {
namespace {

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

std::string take_message(epprof_status* st) {
  std::string msg = epprof_status_get_message(st);
  epprof_status_release(st);
  return msg;
}

// One capture in progress: the request, its per-run observer, and what the
// answer needs.
struct Capture {
  epprof_capture_request request{};
  std::string path;
  std::unique_ptr<rt::ProfilingObserver> observer;
  uint64_t runs = 0;
  int64_t first_run_ns = 0;
  int64_t run_ns = 0;  // wall time inside session.run, summed
};

void report_failure(epprof_listener_t l, uint64_t id, epprof_status_code code, const std::string& message) {
  epprof_capture_result r{};
  r.size = sizeof r;
  r.code = code;
  r.message = message.c_str();
  if (epprof_status* st = epprof_listener_complete(l, id, &r))
    std::fprintf(stderr, "epprof run: %s\n", take_message(st).c_str());
  std::fprintf(stderr, "epprof run: capture %llu failed: %s\n", (unsigned long long)id, message.c_str());
}

// Takes the pending request and opens its scope; nullopt when the request
// went away meanwhile or its scope cannot be opened (the client is told).
std::optional<Capture> begin_capture(epprof_listener_t l, const ServeOptions& o) {
  Capture c;
  c.request.size = sizeof c.request;
  if (epprof_status* st = epprof_listener_take(l, &c.request)) {
    epprof_status_release(st);  // its client left before this run boundary
    return std::nullopt;
  }
  c.path = c.request.trace_path;
  const uint64_t id = c.request.request_id;
  try {
    std::string error;
    if (!io::check_output_path(c.path, o.inputs, nullptr, &error)) throw rt::Error(rt::ErrorKind::Io, error);
    rt::ProfilingOptions po;
    po.trace_path = c.path;
    po.scope_name = c.request.scope_name;
    po.plugins = o.plugins;
    po.integer_timestamps = o.integer_timestamps;
    po.filter = c.request.filter;  // recorded in the trace's metadata by libepprof
    po.metadata = {{"model", o.model},
                   {"capture_request", std::to_string(id)},
                   {"capture_client_pid", std::to_string(c.request.client_pid)},
                   {"capture_requested", c.request.runs ? std::to_string(c.request.runs) + " runs"
                                                        : std::to_string(c.request.duration_ns / 1000000) + " ms"}};
    c.observer = std::make_unique<rt::ProfilingObserver>(po);
  } catch (const std::exception& e) {
    report_failure(l, id, EPPROF_IO_ERROR, e.what());
    return std::nullopt;
  }
  return c;
}

void end_capture(epprof_listener_t l, Capture& c) {
  const uint64_t id = c.request.request_id;
  epprof_trace_stats stats{};
  try {
    stats = c.observer->finish();
  } catch (const std::exception& e) {
    report_failure(l, id, EPPROF_IO_ERROR, e.what());
    return;
  }
  char summary[160];
  std::snprintf(summary, sizeof summary, "%.3f ms per run (inside Session::run, %llu runs)",
                double(c.run_ns) / 1e6 / double(c.runs), (unsigned long long)c.runs);
  epprof_capture_result r{};
  r.size = sizeof r;
  r.code = EPPROF_OK;
  r.trace_path = c.path.c_str();
  r.runs = c.runs;
  r.host_events = stats.host_events;
  r.device_events = stats.device_events;
  r.filtered_events = stats.filtered_events;
  r.first_run_ns = c.first_run_ns;
  r.summary = summary;
  if (epprof_status* st = epprof_listener_complete(l, id, &r))
    std::fprintf(stderr, "epprof run: %s\n", take_message(st).c_str());
  std::printf("capture %llu: %llu runs -> %s (first run %.3f ms after the request)", (unsigned long long)id,
              (unsigned long long)c.runs, c.path.c_str(), double(c.first_run_ns - c.request.received_ns) / 1e6);
  if (c.request.filter)  // only its presence: the request's strings went with complete()
    std::printf("; filtered: %llu events left out", (unsigned long long)stats.filtered_events);
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int serve_captures(rt::Session& session, const std::map<std::string, rt::Tensor>& inputs, const ServeOptions& o) {
  install_signal_handlers(SignalMode::kFinishCurrentWork);
  for (int i = 0; i < o.warmup && !pending_signal(); ++i) session.run(inputs);

  epprof_listener_config config{};
  config.size = sizeof config;
  config.socket_dir = o.socket_dir.empty() ? nullptr : o.socket_dir.c_str();
  epprof_listener_t listener{};
  if (epprof_status* st = epprof_listener_start(&config, &listener))
    throw rt::Error(rt::ErrorKind::Io, "--serve: " + take_message(st));
  const char* socket = "";
  epprof_status_release(epprof_listener_get_socket_path(listener, &socket));
  std::printf("serving %s as pid %d; capture listener at %s\ncapture with: epprof capture %d --runs 10\n",
              o.model.c_str(), int(getpid()), socket, int(getpid()));
  std::fflush(stdout);

  std::optional<Capture> capture;
  uint64_t runs = 0, captures = 0;
  std::string run_error;
  while (!pending_signal()) {
    // The run boundary: one relaxed load while nobody asks.
    if (!capture && epprof_listener_pending(listener)) capture = begin_capture(listener, o);
    rt::RunOptions ro;
    if (capture) ro.observer = capture->observer.get();
    const int64_t start = epprof_clock_now_ns();
    if (capture && capture->runs == 0) capture->first_run_ns = start;
    try {
      session.run(inputs, ro);
    } catch (const std::exception& e) {
      run_error = "run " + std::to_string(runs + 1) + " failed: " + e.what();
      break;
    }
    ++runs;
    if (capture) {
      const int64_t end = epprof_clock_now_ns();
      capture->run_ns += end - start;
      ++capture->runs;
      const epprof_capture_request& r = capture->request;
      if (r.runs ? capture->runs >= r.runs : end - capture->first_run_ns >= r.duration_ns) {
        end_capture(listener, *capture);
        capture.reset();
        ++captures;
      }
    }
    if (o.pause_ms > 0) {
      timespec ts{o.pause_ms / 1000, long(o.pause_ms % 1000) * 1000000};
      nanosleep(&ts, nullptr);  // a signal cuts it short
    }
  }
  const int sig = pending_signal();
  if (capture) {
    // Its observer goes without finish(): no trace, not even a partial one.
    report_failure(listener, capture->request.request_id, EPPROF_FAILED_PRECONDITION,
                   "process " + std::to_string(getpid()) + " " +
                       (sig ? std::string("was stopped by ") + signal_name(sig) : run_error) +
                       " before the capture completed; no trace was written");
    capture.reset();
  }
  epprof_status_release(epprof_listener_stop(listener));
  if (!run_error.empty()) {
    std::fprintf(stderr, "epprof run: %s\n", run_error.c_str());
    return kExitError;
  }
  std::printf("stopped by %s after %llu runs and %llu captures\n", signal_name(sig), (unsigned long long)runs,
              (unsigned long long)captures);
  return kExitOk;
}

}  // namespace epprof::cli
