// `epprof capture PID`: asks a running host's capture listener
// (epprof/capture.h) to profile its next runs, waits for the trace and
// prints where it is. The client side of the protocol lives here; the
// listener and the protocol's definition are libepprof's.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <simdjson.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <regex>
#include <string>
#include <vector>

#include "cli.h"
#include "epprof/profiler.h"
#include "io/atomic_file.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "capture";
// The listener's limits on a filter (epprof/capture.h).
constexpr size_t kMaxFilterNames = 1024, kMaxFilterName = 1024;
constexpr size_t kMaxRequestBytes = 64 * 1024;  // one request line, newline included

// What the trace leaves out (the request's "filter"); empty: nothing.
struct Filter {
  std::vector<std::string> categories, op_types, node_names, ep_names;
  std::string node_regex, kernel_regex;
  bool empty() const {
    return categories.empty() && op_types.empty() && node_names.empty() && ep_names.empty() && node_regex.empty() &&
           kernel_regex.empty();
  }
};

struct Options {
  int64_t pid = 0;
  int64_t runs = 0;
  double duration_s = 0;
  std::string output;
  double timeout_s = 60;
  bool timeout_given = false;
  std::string socket_dir;
  std::string scope;
  Filter filter;
};

void print_help() {
  std::printf(
      "usage: epprof capture PID [--runs N | --duration S] [options]\n"
      "\n"
      "Asks the running process PID to profile its next runs and write a trace.\n"
      "The process must have a capture listener open: a host that embeds\n"
      "libepprof calls epprof_listener_start (epprof/capture.h); `epprof run\n"
      "--serve` does. The process opens a profiling scope at its next run\n"
      "boundary, records N runs (or the runs that start within S seconds of the\n"
      "first), writes the trace and answers; this command then prints the\n"
      "trace's path and a summary: runs captured, events, and the time from the\n"
      "request to the start of the first recorded run.\n"
      "\n"
      "options:\n"
      "  --runs N          runs to capture, 1..1000000 (default 10)\n"
      "  --duration S      capture the runs that start within S seconds (0.001..86400)\n"
      "                    of the first one, instead of a count\n"
      "  --output PATH     trace file, written by the process (same user); default\n"
      "                    epprof_capture_<pid>_<YYYYmmdd-HHMMSS>.json in the current\n"
      "                    directory. A path ending in .db, .sqlite or .sqlite3 gets a\n"
      "                    SQLite trace. A regular file there is replaced once the\n"
      "                    trace is complete; a directory, FIFO or device is refused\n"
      "  --scope NAME      the scope's name in the trace metadata (default 'capture')\n"
      "  --timeout S       give up waiting after S seconds (default 60, plus the\n"
      "                    --duration). A capture the process has started still\n"
      "                    completes and writes its trace\n"
      "  --socket-dir DIR  where the process's listener is (default: $XDG_RUNTIME_DIR/epprof,\n"
      "                    then /tmp/epprof-<uid>, as the listener chooses)\n"
      "  -h, --help        show this help\n"
      "\n"
      "filters (the trace keeps what passes all of them; each at most once):\n"
      "  --op-types LIST   node events of these op types only (Conv,Gemm)\n"
      "  --nodes LIST      node events of these nodes only (names without commas;\n"
      "                    with --node-regex, a node passes if either matches)\n"
      "  --node-regex RE   node events whose node name matches RE (ECMAScript, whole name)\n"
      "  --eps LIST        node events of these execution providers only\n"
      "                    (CPUExecutionProvider,OpenCLExecutionProvider)\n"
      "  --kernel-regex RE device events (kernels, copies, API calls) whose name matches RE\n"
      "  --categories LIST events of these categories only: session, node, kernel,\n"
      "                    api, memcpy, counter, memory (memory: the memory-in-use\n"
      "                    tracks and mem_* args; counter: counter samples)\n"
      "The runs (model_run and the other session events) are always kept: they are\n"
      "the trace's timeline. Device events go with the node that launched them: a\n"
      "node left out takes its device work along. The trace's metadata records the\n"
      "filter and how many events it left out, and so does the summary printed.\n"
      "  e.g. epprof capture 4242 --runs 20 --op-types Conv,MatMul --kernel-regex '.*gemm.*'\n"
      "\n"
      "Only the process's own user may capture it: the socket is in a directory\n"
      "only that user can enter, and the listener checks each peer's uid (root\n"
      "included). One capture at a time: a second is refused while one runs.\n"
      "\n"
      "Exit status: 0 when the trace was written; 1 when it was not (no such\n"
      "process, no listener, refused, a capture already in progress, the process\n"
      "exited or failed, timeout: the message says which); 2 for a bad command line.\n");
}

constexpr int kNotAFilter = -1;

// A filter option at argv[i] (its value at argv[i + 1]): kExitOk, a usage
// error's code, or kNotAFilter for any other argument.
int parse_filter(const std::string& a, int argc, char** argv, int& i, Filter& f) {
  std::vector<std::string>* list = a == "--op-types" ? &f.op_types
                                   : a == "--nodes"  ? &f.node_names
                                   : a == "--eps"    ? &f.ep_names
                                   : a == "--categories" ? &f.categories
                                                         : nullptr;
  std::string* regex = a == "--node-regex" ? &f.node_regex : a == "--kernel-regex" ? &f.kernel_regex : nullptr;
  if (!list && !regex) return kNotAFilter;
  const char* v = i + 1 < argc ? argv[++i] : nullptr;
  if (!v || !*v)
    return usage_error(kCommand, a + (list ? " needs a comma-separated list" : " needs a regular expression"));
  if (list ? !list->empty() : !regex->empty())
    return usage_error(kCommand, a + " is given twice; give one " + (list ? "comma-separated list" : "expression"));
  if (std::strlen(v) > (list ? kMaxFilterNames * (kMaxFilterName + 1) : kMaxFilterName))
    return usage_error(kCommand, a + " is too long");
  if (regex) {
    try {
      std::regex check(v, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return usage_error(kCommand, a + " '" + v + "' is not a valid ECMAScript regular expression: " + e.what());
    }
    *regex = v;
    return kExitOk;
  }
  *list = split_list(v);
  if (list->size() > kMaxFilterNames)
    return usage_error(kCommand, a + " lists more than " + std::to_string(kMaxFilterNames) + " names");
  for (const std::string& name : *list) {
    if (name.empty()) return usage_error(kCommand, a + " '" + v + "' has an empty name");
    if (name.size() > kMaxFilterName)
      return usage_error(kCommand, a + ": a name is longer than " + std::to_string(kMaxFilterName) + " bytes");
  }
  if (list == &f.categories) {
    // The library's names (epprof_category_name), which the listener takes.
    std::string known;
    for (uint32_t c = 0; c < EPPROF_CATEGORY_COUNT_; ++c)
      known += std::string(c ? ", " : "") + epprof_category_name(epprof_category(c));
    for (const std::string& name : *list) {
      uint32_t c = 0;
      while (c < EPPROF_CATEGORY_COUNT_ && name != epprof_category_name(epprof_category(c))) ++c;
      if (c == EPPROF_CATEGORY_COUNT_)
        return usage_error(kCommand, "--categories: '" + name + "' is not a category (one of " + known + ")");
    }
  }
  return kExitOk;
}

int parse(int argc, char** argv, Options& o) {
  auto need = [&](int& i) -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
  bool has_runs = false, has_duration = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = nullptr;
    if (a == "-h" || a == "--help") {
      print_help();
      std::exit(kExitOk);
    } else if (a == "--runs") {
      if (!(v = need(i)) || !parse_int(v, 1, 1000000, &o.runs))
        return usage_error(kCommand, "--runs needs an integer in 1..1000000");
      has_runs = true;
    } else if (a == "--duration" || a == "--timeout") {
      char* end = nullptr;
      double s = (v = need(i)) ? std::strtod(v, &end) : 0;
      const double lo = a == "--duration" ? 0.001 : 0.1;
      if (!v || !*v || *end || !std::isfinite(s) || s < lo || s > 86400)
        return usage_error(kCommand, a + " needs seconds in " + (a == "--duration" ? "0.001" : "0.1") + "..86400");
      if (a == "--duration") o.duration_s = s, has_duration = true;
      else o.timeout_s = s, o.timeout_given = true;
    } else if (a == "--output") {
      if (!(v = need(i)) || !*v) return usage_error(kCommand, "--output needs a path");
      o.output = v;
    } else if (a == "--scope") {
      if (!(v = need(i)) || !*v || std::strlen(v) > 256) return usage_error(kCommand, "--scope needs a name of 1..256 bytes");
      o.scope = v;
    } else if (a == "--socket-dir") {
      if (!(v = need(i)) || !*v) return usage_error(kCommand, "--socket-dir needs a directory");
      o.socket_dir = v;
    } else if (const int rc = parse_filter(a, argc, argv, i, o.filter); rc != kNotAFilter) {
      if (rc != kExitOk) return rc;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else if (o.pid == 0) {
      if (!parse_int(a.c_str(), 1, INT32_MAX, &o.pid)) return usage_error(kCommand, "'" + a + "' is not a process id");
    } else {
      return usage_error(kCommand, "one PID only ('" + std::to_string(o.pid) + "' and '" + a + "')");
    }
  }
  if (o.pid == 0) return usage_error(kCommand, "which process? give its PID");
  if (has_runs && has_duration) return usage_error(kCommand, "--runs and --duration exclude each other");
  if (!has_runs && !has_duration) o.runs = 10;
  if (!o.timeout_given) o.timeout_s += o.duration_s;
  return kExitOk;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return path;
  return std::string(cwd) + "/" + path;
}

// epprof_capture_<pid>_<time>.json in the current directory, with a suffix
// when that exists already: the default never replaces a file.
std::string default_output(int64_t pid) {
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  const std::string base = "epprof_capture_" + std::to_string(pid) + "_" + stamp;
  std::string path = base + ".json";
  for (int k = 2; access(path.c_str(), F_OK) == 0 && k < 1000; ++k) path = base + "_" + std::to_string(k) + ".json";
  return absolute(path);
}

// The JSON string literal of `s` (the request's strings).
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += char(c);
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += char(c);
  }
  return out + "\"";
}

// The request's "filter" object (epprof/capture.h).
std::string filter_json(const Filter& f) {
  std::string out;
  auto add = [&](const char* key, const std::string& value) {
    out += std::string(out.empty() ? "{" : ",") + "\"" + key + "\":" + value;
  };
  auto list = [&](const char* key, const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::string items;
    for (const std::string& n : names) items += (items.empty() ? "" : ",") + quote(n);
    add(key, "[" + items + "]");
  };
  list("categories", f.categories);
  list("op_types", f.op_types);
  list("node_names", f.node_names);
  if (!f.node_regex.empty()) add("node_name_regex", quote(f.node_regex));
  list("ep_names", f.ep_names);
  if (!f.kernel_regex.empty()) add("kernel_name_regex", quote(f.kernel_regex));
  return out + "}";
}

// The directories the listener may have chosen, in its order.
std::vector<std::string> socket_dirs(const Options& o) {
  if (!o.socket_dir.empty()) return {absolute(o.socket_dir)};
  std::vector<std::string> dirs;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && xdg[0] == '/') dirs.push_back(std::string(xdg) + "/epprof");
  dirs.push_back("/tmp/epprof-" + std::to_string(geteuid()));
  return dirs;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "epprof capture: %s\n", message.c_str());
  return kExitError;
}

// Connects to pid's listener; returns the socket, or -1 after printing why.
int connect_listener(const Options& o) {
  const std::string pid = std::to_string(o.pid);
  bool other_user = false;
  if (kill(pid_t(o.pid), 0) != 0) {
    if (errno == ESRCH) return fail("no such process: " + pid), -1;
    other_user = errno == EPERM;
  }
  std::string tried;
  for (const std::string& dir : socket_dirs(o)) {
    const std::string path = dir + "/epprof-" + pid + ".sock";
    tried += (tried.empty() ? "" : ", ") + path;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return fail("socket path too long: '" + path + "'"), -1;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(std::string("socket: ") + std::strerror(errno)), -1;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
    const int err = errno;
    close(fd);
    if (err == ENOENT || err == ENOTDIR) continue;
    if (err == ECONNREFUSED)
      return fail("process " + pid + " does not answer at '" + path +
                  "': a socket without a listener (left by a process that was killed?)"),
             -1;
    if (err == EACCES || err == EPERM)
      return fail("permission denied at '" + path + "'" +
                  (other_user ? ": process " + pid + " belongs to another user; only that user may capture it"
                              : std::string())),
             -1;
    return fail("cannot connect to '" + path + "': " + std::strerror(err)), -1;
  }
  if (other_user)
    return fail("process " + pid + " belongs to another user; only that user may capture it (looked for " + tried +
                ")"),
           -1;
  return fail("process " + pid + " has no capture listener (no socket at " + tried +
              "); a host opens one with epprof_listener_start, as `epprof run --serve` does"),
         -1;
}

int execute(const Options& o) {
  const std::string output = o.output.empty() ? default_output(o.pid) : absolute(o.output);
  std::string error;
  if (!io::check_output_path(output, {}, nullptr, &error)) return fail(error);
  std::string request = "{\"protocol\":1,";
  if (o.runs) request += "\"runs\":" + std::to_string(o.runs);
  else request += "\"duration_ms\":" + std::to_string(std::max<int64_t>(1, std::llround(o.duration_s * 1000)));
  request += ",\"output\":" + quote(output);
  if (!o.scope.empty()) request += ",\"scope_name\":" + quote(o.scope);
  if (!o.filter.empty()) request += ",\"filter\":" + filter_json(o.filter);
  request += "}\n";
  if (request.size() > kMaxRequestBytes)
    return fail("the request is " + std::to_string(request.size()) + " bytes, more than a listener takes (" +
                std::to_string(kMaxRequestBytes) + "): shorten the filter's lists");
  const int fd = connect_listener(o);
  if (fd < 0) return kExitError;
  // A listener that refuses a client (another uid, too many connections)
  // answers and closes at once, so the send can fail before the reply is
  // read: then the reply, still queued, says why.
  bool sent = true;
  for (size_t off = 0; off < request.size();) {
    const ssize_t n = send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sent = false;
      break;
    }
    off += size_t(n);
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(o.timeout_s * 1000));
  const std::string who = "process " + std::to_string(o.pid);
  std::string buf;
  bool started = false;
  simdjson::dom::parser parser;
  auto ignore = [](simdjson::error_code) {};  // optional fields keep their defaults
  for (;;) {
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      const std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      simdjson::dom::element msg;
      std::string_view event;
      if (parser.parse(line).get(msg) || msg["event"].get(event)) {
        close(fd);
        return fail(who + " answered something that is not the capture protocol: " + line.substr(0, 200));
      }
      if (event == "accepted") {
        std::fprintf(stderr, "epprof capture: %s accepted the request; waiting for its next run\n", who.c_str());
      } else if (event == "started") {
        started = true;
        std::fprintf(stderr, "epprof capture: capturing %s\n",
                     o.runs ? (std::to_string(o.runs) + " runs").c_str()
                            : (format_seconds(o.duration_s) + " s of runs").c_str());
      } else if (event == "error") {
        std::string_view text = "unknown error";
        ignore(msg["error"].get(text));
        close(fd);
        return fail(who + ": " + std::string(text));
      } else if (event == "done") {
        std::string_view trace = output, summary;
        uint64_t runs = 0, host_events = 0, device_events = 0;
        int64_t latency = -1, filtered = -1;
        ignore(msg["trace"].get(trace));
        ignore(msg["runs"].get(runs));
        ignore(msg["host_events"].get(host_events));
        ignore(msg["device_events"].get(device_events));
        ignore(msg["latency_ns"].get(latency));
        ignore(msg["filtered_events"].get(filtered));
        ignore(msg["summary"].get(summary));
        close(fd);
        std::printf("trace: %.*s\n", int(trace.size()), trace.data());
        std::printf("captured %llu runs of %s (%llu host events, %llu device events)", (unsigned long long)runs,
                    who.c_str(), (unsigned long long)host_events, (unsigned long long)device_events);
        if (latency >= 0) std::printf("; first run began %.3f ms after the request", double(latency) / 1e6);
        std::printf("\n");
        // A filtered trace is partial: say so, and how much it left out.
        if (!o.filter.empty()) {
          if (filtered >= 0)
            std::printf("filtered: %lld events left out (the trace's metadata records the filter)\n",
                        (long long)filtered);
          else
            std::printf("filtered (the trace's metadata records the filter; the process did not count what "
                        "it left out)\n");
        }
        if (!summary.empty()) std::printf("%.*s\n", int(summary.size()), summary.data());
        return kExitOk;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      close(fd);
      return fail("timed out after " + std::to_string(int64_t(o.timeout_s)) + " s waiting for " + who +
                  (started ? "; the capture has started and will still write " + output
                           : "; it has not reached a run boundary, and the request is withdrawn"));
    }
    pollfd p{fd, POLLIN, 0};
    const int rc = poll(&p, 1, int(std::min<int64_t>(left.count(), 1000)));
    if (rc < 0 && errno != EINTR) {
      close(fd);
      return fail(std::string("poll: ") + std::strerror(errno));
    }
    if (rc <= 0) continue;
    char chunk[4096];
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return fail(sent ? who + " exited before the capture completed; no trace was written"
                       : who + " closed the connection before the request was sent");
    }
    buf.append(chunk, size_t(n));
    if (buf.size() > (1u << 20)) {
      close(fd);
      return fail(who + " sent an answer longer than 1 MiB");
    }
  }
}

}  // namespace

int run_capture(int argc, char** argv) {
  Options o;
  if (int rc = parse(argc, argv, o); rc != kExitOk) return rc;
  try {
    return execute(o);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace epprof::cli
