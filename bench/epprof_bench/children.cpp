// epprof_bench, what runs in a child process (this binary re-executed with
// --child=KIND N), so that no earlier measurement's heap is counted:
// resident bytes per recorded event, and a 50M-event scope (peak RSS, its
// stop, and the floors of writing its bytes).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "core/record.h"

namespace epprof::bench {
namespace {

// ---------------------------------------------------------------------------
// Child processes: this binary re-executed with --child=KIND N.

struct ChildResult {
  bool ok = false;
  std::map<std::string, std::string> kv;  // key=value lines the child printed
  long maxrss_kb = 0;                      // the child's own peak RSS (wait4)
};

ChildResult run_child(const std::string& kind, uint64_t n) {
  free_hot_path_profilers();
  ChildResult res;
  int fds[2];
  if (pipe(fds) != 0) return res;
  const std::string arg_kind = "--child=" + kind, arg_n = std::to_string(n);
  const std::string arg_api = g_api.origin.rfind("static", 0) == 0 ? "--static-api" : "";
  const pid_t pid = fork();
  if (pid < 0) return res;
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv{const_cast<char*>("epprof_bench"), const_cast<char*>(arg_kind.c_str()),
                            const_cast<char*>(arg_n.c_str())};
    if (g_quick) argv.push_back(const_cast<char*>("--quick"));
    if (!arg_api.empty()) argv.push_back(const_cast<char*>(arg_api.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) != 0;) {
    if (k < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, size_t(k));
  }
  close(fds[0]);
  int status = 0;
  struct rusage ru {};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  res.maxrss_kb = ru.ru_maxrss;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) res.kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  res.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!res.ok) std::fprintf(stderr, "epprof_bench: child %s failed (status %d)\n", kind.c_str(), status);
  return res;
}

long statm_resident_bytes() {
  long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

long status_kb(const char* field) {  // VmHWM, VmRSS from /proc/self/status
  std::ifstream f("/proc/self/status");
  const size_t len = std::strlen(field);
  for (std::string line; std::getline(f, line);)
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':')
      return std::atol(line.c_str() + len + 1);
  return -1;
}

// 5 (child). Resident bytes per recorded event: RSS before and after
// recording `n` events (no args) into a running profiler whose budget is
// large enough not to spill.
int child_rss(uint64_t n) {
  g_name = intern_public("Conv_0_kernel_time");
  const uint64_t budget = n * sizeof(core::Record) * 2 + (256ull << 20);
  RunningProfiler prof("rss", budget);
  // One event first, so the thread's registration and first chunk are not
  // counted (they are per thread, not per event).
  record_nested_public(prof.handle(), 1, g_name, g_name);
  const long before = statm_resident_bytes();
  const auto t = Clock::now();
  record_nested_public(prof.handle(), n, g_name, g_name);
  const double secs = seconds_since(t);
  const long after = statm_resident_bytes();
  std::printf("events=%" PRIu64 "\nrss_before=%ld\nrss_after=%ld\nrecord_s=%.4f\n", n, before,
              after, secs);
  return 0;
}

// Seconds to write `bytes` bytes (a buffer of trace-like text, 1 MiB per
// write) to a new file at `path`, which is removed afterwards; -1 when a
// write fails.
double write_bytes_floor(const std::string& path, uint64_t bytes) {
  std::string buf;
  const std::string line = "{\"cat\":\"Node\",\"name\":\"Conv_0_kernel_time\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":1}\n";
  while (buf.size() < (1u << 20)) buf += line;
  buf.resize(1u << 20);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  const auto t = Clock::now();
  bool ok = true;
  for (uint64_t left = bytes; left > 0 && ok;) {
    const size_t n = size_t(std::min<uint64_t>(left, buf.size()));
    ok = write(fd, buf.data(), n) == ssize_t(n);
    left -= n;
  }
  ok = close(fd) == 0 && ok;
  const double secs = seconds_since(t);
  unlink(path.c_str());
  return ok ? secs : -1;
}

// 6 (child). A long scope: 64 MiB memory budget, 2 threads recording n/2
// events each through the public API, stop writes the trace (integer us).
int child_scope(uint64_t n) {
  g_name = intern_public("Conv_0_kernel_time");
  const epprof_name_id leaf = intern_public("conv2d_nchw_kernel");
  // --quick records 2M events (64 MB): a smaller budget still makes it spill.
  const uint64_t budget = g_quick ? 16ull << 20 : 64ull << 20;
  const auto t0 = Clock::now();
  auto prof = std::make_unique<RunningProfiler>("scope", budget, EPPROF_TIMESTAMPS_INTEGER_US);
  const epprof_profiler_t p = prof->handle();
  std::thread a([&] { record_nested_public(p, n / 2, g_name, leaf); });
  std::thread b([&] { record_nested_public(p, n - n / 2, g_name, leaf); });
  a.join();
  b.join();
  const double record_s = seconds_since(t0);
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto t1 = Clock::now();
  check(g_api.stop(p, &stats), "epprof_profiler_stop");
  const double stop_s = seconds_since(t1);
  const double total_s = seconds_since(t0);
  struct stat st {};
  stat(prof->path().c_str(), &st);
  const long hwm_kb = status_kb("VmHWM");
  // The floor of any stop: writing the trace's bytes to the same file
  // system, 1 MiB at a time, with nothing formatted, merged or read back.
  // Twice: first while the trace still holds its pages, so that the write
  // takes fresh page-cache pages, as the stop's did; on virtual machines
  // that shadow page tables a fresh page costs a trap (dd here: 4 GB in
  // 5-8 s fresh, 1.7 s into just-freed pages). Then, once the trace is
  // deleted, into the pages it freed: the least a write can cost.
  const std::string floor_path = tmp_path("scope_write_floor");
  const double fresh_write_s = write_bytes_floor(floor_path, uint64_t(st.st_size));
  prof.reset();  // destroys the profiler and deletes the trace
  const double write_s = write_bytes_floor(floor_path, uint64_t(st.st_size));
  std::printf("events=%" PRIu64 "\nhost_events=%" PRIu64 "\ndropped=%" PRIu64
              "\nspilled_bytes=%" PRIu64 "\ntrace_bytes=%lld\nrecord_s=%.3f\nstop_s=%.3f\n"
              "total_s=%.3f\nvm_hwm_kb=%ld\nwrite_floor_s=%.3f\nfresh_write_floor_s=%.3f\n",
              n, stats.host_events, stats.dropped_events, stats.spilled_bytes,
              (long long)st.st_size, record_s, stop_s, total_s, hwm_kb, write_s, fresh_write_s);
  return 0;
}

constexpr const char* kRss = "rss_bytes_per_event";
constexpr const char* kScopeRss = "scope_50M_peak_rss";
constexpr const char* kScopeStop = "scope_50M_stop";
constexpr const char* kScopeWriteFloor = "scope_50M_write_floor";
constexpr const char* kScopeFreshWriteFloor = "scope_50M_fresh_write_floor";

void BM_rss_per_event(benchmark::State& state) {
  const uint64_t n = g_quick ? 1000000 : 10000000;
  for (auto _ : state) {
    ChildResult c = run_child("rss", n);
    if (!c.ok) {
      state.SetIterationTime(1e-3);
      g_failed = true;
      state.SkipWithError("the rss child failed");
      break;
    }
    state.SetIterationTime(std::stod(c.kv["record_s"]));
    const double delta = std::stod(c.kv["rss_after"]) - std::stod(c.kv["rss_before"]);
    g_samples[kRss].push_back(delta / double(n));
    g_notes[kRss] = std::to_string(n / 1000000) + "M events, RSS delta " +
                    std::to_string(long(delta / 1e6)) + " MB (/proc/self/statm, child process)";
  }
}

void BM_scope(benchmark::State& state) {
  const uint64_t n = g_quick ? 2000000 : 50000000;
  for (auto _ : state) {
    ChildResult c = run_child("scope", n);
    if (!c.ok) {
      g_failed = true;
      state.SetIterationTime(1e-3);
      state.SkipWithError("the scope child failed");
      break;
    }
    state.SetIterationTime(std::stod(c.kv["total_s"]));
    const uint64_t dropped = std::stoull(c.kv["dropped"]);
    const uint64_t host_events = std::stoull(c.kv["host_events"]);
    if (dropped != 0 || host_events != n) {
      std::fprintf(stderr, "scope: %" PRIu64 " host events of %" PRIu64 ", %" PRIu64 " dropped\n",
                   host_events, n, dropped);
      g_failed = true;
    }
    g_samples[kScopeRss].push_back(double(c.maxrss_kb) / 1024.0);
    g_samples[kScopeStop].push_back(std::stod(c.kv["stop_s"]));
    g_notes[kScopeStop] = "epprof_profiler_stop of that scope: merge, spill read-back, export, write";
    if (const double w = std::stod(c.kv["write_floor_s"]); w >= 0) {
      g_samples[kScopeWriteFloor].push_back(w);
      char floor_note[160];
      std::snprintf(floor_note, sizeof floor_note,
                    "the trace's %.2f GB written to the same file system in 1 MiB writes, nothing formatted, "
                    "into page-cache pages the stop just freed",
                    std::stod(c.kv["trace_bytes"]) / 1e9);
      g_notes[kScopeWriteFloor] = floor_note;
    }
    if (const double w = std::stod(c.kv["fresh_write_floor_s"]); w >= 0) {
      g_samples[kScopeFreshWriteFloor].push_back(w);
      g_notes[kScopeFreshWriteFloor] =
          "the same bytes written while the trace still holds its pages: fresh page-cache pages, as the stop's "
          "writes take";
    }
    char note[512];
    std::snprintf(note, sizeof note,
                  "%" PRIu64 "M events, 2 threads, %s MiB budget: %s s (record %s + stop %s), "
                  "trace %.2f GB, spilled %.2f GB, dropped %" PRIu64 " (VmHWM %s kB)",
                  n / 1000000, g_quick ? "16" : "64", c.kv["total_s"].c_str(), c.kv["record_s"].c_str(),
                  c.kv["stop_s"].c_str(), std::stod(c.kv["trace_bytes"]) / 1e9,
                  std::stod(c.kv["spilled_bytes"]) / 1e9, dropped, c.kv["vm_hwm_kb"].c_str());
    g_notes[kScopeRss] = note;
  }
}

}  // namespace

void register_children() {
  register_macro(kRss, BM_rss_per_event, 1);
  register_macro(kScopeRss, BM_scope, 1);
}

void add_children_rows(std::vector<Row>& rows) {
  add_macro_row(rows, kRss, "resident bytes per recorded event", "<= 48 B", "%.1f B", 1, false, 48);
  add_macro_row(rows, kScopeRss, "50M-event scope, peak RSS", "<= 256 MB", "%.0f MB", 1, false, 256);
  add_macro_row(rows, kScopeStop, "  50M-event scope, stop", "<= 8 s", "%.2f s", 1, false, 8);
  add_macro_row(rows, kScopeWriteFloor, "  floor: write the trace's bytes", "-", "%.2f s", 1, false, 0);
  add_macro_row(rows, kScopeFreshWriteFloor, "  floor: same, fresh pages", "-", "%.2f s", 1, false, 0);
}

int run_as_child(const std::string& kind, uint64_t n) {
  if (kind == "rss") return child_rss(n);
  if (kind == "scope") return child_scope(n);
  std::fprintf(stderr, "epprof_bench: unknown child kind '%s'\n", kind.c_str());
  return 2;
}

}  // namespace epprof::bench
