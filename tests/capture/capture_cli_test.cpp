// `epprof run --serve` captured by `epprof capture`, run as a user runs
// them: traces hold exactly the requested runs and validate, device work
// is attributed, and every way a capture can go wrong gets its message.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace {

namespace fs = std::filesystem;
using epprof::testing::TempDir;
using epprof::testing::TraceEvent;

const std::string kCli = EPPROF_CLI_PATH;
const std::string kModels = EPPROF_MODELS_DIR;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A child process running `epprof ARGS...`, stdout and stderr into a file.
class Proc {
 public:
  Proc(const std::vector<std::string>& args, const std::string& log, const std::string& prefix_cmd = "")
      : log_(log) {
    // Truncated here, before the fork: wait_for() must never read what an
    // earlier process left in the same file.
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = fork();
    if (pid_ != 0 && fd >= 0) close(fd);
    if (pid_ == 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<std::string> all;
      if (!prefix_cmd.empty()) all = {"/bin/sh", "-c", prefix_cmd + " \"$@\"", "sh"};
      all.push_back(kCli);
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Proc() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  std::string output() const { return read_file(log_); }
  // Waits until the output holds `text`; false after timeout or exit.
  bool wait_for(const std::string& text, int timeout_s = 60) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (contains(output(), text)) return true;
      if (!reaped_ && waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
      if (reaped_) return contains(output(), text);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Exit code (-signal when killed), waiting up to timeout_s.
  int wait(int timeout_s = 60) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (!reaped_ && std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!reaped_) return -1000;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -WTERMSIG(status_);
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

// `epprof run MODEL --serve` with its listener in dir/sock and a 1 ms
// pause between runs (a gentle server on a shared machine).
class Server {
 public:
  Server(const TempDir& dir, const std::vector<std::string>& extra = {}, const std::string& name = "serve",
         const std::string& model = kModels + "/mlp.onnx")
      : socket_dir_(dir.file("sock")), proc_(args(model, extra), dir.file(name + ".log")) {
    ready_ = proc_.wait_for("capture listener at");
  }
  bool ready() const { return ready_; }
  pid_t pid() const { return proc_.pid(); }
  const std::string& socket_dir() const { return socket_dir_; }
  std::string socket() const { return socket_dir_ + "/epprof-" + std::to_string(pid()) + ".sock"; }
  std::string output() const { return proc_.output(); }
  Proc& proc() { return proc_; }

 private:
  std::vector<std::string> args(const std::string& model, const std::vector<std::string>& extra) const {
    std::vector<std::string> a = {"run", model, "--serve", "--socket-dir", socket_dir_, "--pause", "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string socket_dir_;
  Proc proc_;
  bool ready_ = false;
};

epprof::testing::ShellResult capture(const Server& s, const std::vector<std::string>& args,
                                     const std::string& prefix = "") {
  std::string cmd = prefix + "timeout -s KILL 120 " + epprof::testing::shell_quote(kCli) + " capture " +
                    std::to_string(s.pid()) + " --socket-dir " + epprof::testing::shell_quote(s.socket_dir());
  for (const auto& a : args) cmd += " " + epprof::testing::shell_quote(a);
  return epprof::testing::run_shell(cmd);
}

size_t count_named(const std::vector<TraceEvent>& trace, const std::string& name) {
  size_t n = 0;
  for (const auto& e : trace) n += e.name == name && e.ph == "X";
  return n;
}

// "first run began 1.234 ms after the request" -> 1.234
double latency_ms(const std::string& out) {
  const std::string key = "first run began ";
  const size_t at = out.find(key);
  return at == std::string::npos ? -1 : std::stod(out.substr(at + key.size()));
}

TEST(CaptureCli, AServingProcessIsCapturedTwiceEachTraceHoldingExactlyTheRequestedRuns) {
  TempDir dir;
  Server server(dir);
  ASSERT_TRUE(server.ready()) << server.output();
  int k = 0;
  for (int runs : {3, 5}) {
    const std::string trace = dir.file("capture" + std::to_string(++k) + ".json");
    const auto r = capture(server, {"--runs", std::to_string(runs), "--output", trace});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "trace: " + trace)) << r.output;
    EXPECT_TRUE(contains(r.output, "captured " + std::to_string(runs) + " runs of process")) << r.output;
    const double ms = latency_ms(r.output);
    EXPECT_GE(ms, 0) << r.output;
    std::printf("capture latency (request -> first recorded run): %.3f ms\n", ms);
    const auto events = epprof::testing::read_trace(trace);
    EXPECT_EQ(count_named(events, "model_run"), size_t(runs));
    EXPECT_EQ(count_named(events, "model_loading_uri"), 0u);
    const auto v = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " validate " + trace);
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }
  // A duration, into a database.
  const std::string db = dir.file("capture.db");
  const auto r = capture(server, {"--duration", "0.2", "--output", db});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(db));
  const auto v = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " validate " + db);
  EXPECT_EQ(v.exit_code, 0) << v.output;

  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  EXPECT_EQ(server.proc().wait(), 0) << server.output();
  EXPECT_TRUE(contains(server.output(), "and 3 captures")) << server.output();
  EXPECT_FALSE(fs::exists(fs::symlink_status(server.socket())));
}

#ifdef EPPROF_HAVE_OPENCL_EP
TEST(CaptureCli, ACaptureWithDeviceTracingOnTheOpenClEpIsAttributed) {
  TempDir dir;
  Server server(dir, {"--ep", "opencl,cpu"}, "serve", kModels + "/cnn.onnx");
  ASSERT_TRUE(server.ready()) << server.output();
  if (contains(server.output(), "not used")) GTEST_SKIP() << "the OpenCL EP is refused here: " << server.output();
  const std::string trace = dir.file("ocl.json");
  const auto r = capture(server, {"--runs", "2", "--output", trace});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto events = epprof::testing::read_trace(trace);
  EXPECT_EQ(count_named(events, "model_run"), 2u);
  std::map<std::string, const TraceEvent*> nodes;
  for (const auto& e : events)
    if (e.cat == "Node" && e.ph == "X") nodes[e.arg("correlation_id")] = &e;
  size_t device = 0, opencl_nodes = 0;
  for (const auto& [id, n] : nodes) opencl_nodes += n->arg("provider") == "OpenCLExecutionProvider";
  for (const auto& d : events) {
    if ((d.cat != "Kernel" && d.cat != "Memcpy") || d.ph != "X") continue;
    ++device;
    auto it = nodes.find(d.arg("correlation_id"));
    ASSERT_NE(it, nodes.end()) << d.name << " correlation_id " << d.arg("correlation_id") << " resolves to no node";
    EXPECT_EQ(d.arg("op_name"), it->second->arg("op_name"));
  }
  EXPECT_GT(device, 0u) << "no device events traced";
  EXPECT_GT(opencl_nodes, 0u);
  for (const auto& e : events)
    if (e.name == "epprof_metadata") {
      EXPECT_EQ(e.arg("unattributed_device_events"), "0");
    }
  const auto v = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " validate " + trace);
  EXPECT_EQ(v.exit_code, 0) << v.output;
}
#endif

// ---- filtered captures ----

// What a trace holds, for comparing a filtered capture with a whole one.
struct TraceCounts {
  std::map<std::string, size_t> nodes_by_op;  // node events per op_name
  std::map<std::string, std::string> op_of;   // node correlation id → op_name
  size_t runs = 0, device = 0;
  std::map<std::string, size_t> device_by_op;  // device events per op_name of their node
  uint64_t host_events = 0, device_events = 0;
  std::string filtered_events, filter;
};

TraceCounts counts_of(const std::string& path) {
  TraceCounts c;
  const auto events = epprof::testing::read_trace(path);
  for (const auto& e : events)
    if (e.cat == "Node" && e.ph == "X") {
      ++c.nodes_by_op[e.arg("op_name")];
      c.op_of[e.arg("correlation_id")] = e.arg("op_name");
    }
  for (const auto& e : events) {
    if (e.name == "model_run" && e.ph == "X") ++c.runs;
    if ((e.cat == "Kernel" || e.cat == "Memcpy") && e.ph == "X") {
      ++c.device;
      auto it = c.op_of.find(e.arg("correlation_id"));
      ++c.device_by_op[it == c.op_of.end() ? "(no node)" : it->second];
    }
    if (e.name == "epprof_metadata") {
      c.host_events = std::stoull(e.arg("host_events"));
      c.device_events = std::stoull(e.arg("device_events"));
      c.filtered_events = e.arg("filtered_events");
      const size_t at = e.args_json.find("\"filter\":");
      if (at != std::string::npos) c.filter = e.args_json.substr(at, e.args_json.find('}', at) - at + 1);
    }
  }
  return c;
}

void expect_valid(const std::string& trace) {
  const auto v = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " validate " + trace);
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

// "... 123 events left out" in the command's output -> 123
std::string left_out_in(const std::string& out) {
  const size_t at = out.find(" events left out");
  if (at == std::string::npos) return "";
  const size_t start = out.rfind(' ', at - 1) + 1;
  return out.substr(start, at - start);
}

// A capture of N runs with --op-types Conv against one of N runs without:
// the node events are the Conv ones, all of them, the runs are all there,
// and what was left out is what the whole trace had more.
void expect_conv_only(const Server& server, const TempDir& dir, const std::string& ext, bool with_device) {
  SCOPED_TRACE(ext);
  const std::string whole = dir.file("whole" + ext + ".json"), conv = dir.file("conv" + ext);
  auto r = capture(server, {"--runs", "3", "--output", whole});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "filtered")) << r.output;
  r = capture(server, {"--runs", "3", "--output", conv, "--op-types", "Conv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_valid(conv);
  TraceCounts w = counts_of(whole);
  ASSERT_GT(w.nodes_by_op["Conv"], 0u) << "the model has Conv nodes";
  ASSERT_GT(w.nodes_by_op.size(), 1u) << "and others";
  EXPECT_EQ(w.runs, 3u);
  EXPECT_TRUE(w.filter.empty());
  // The database reads as its JSON would (the report library's reader).
  const std::string conv_json = ext == ".db" ? dir.file("conv_db.json") : conv;
  if (ext == ".db") {
    const auto c = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " convert " + conv + " " +
                                              conv_json);
    ASSERT_EQ(c.exit_code, 0) << c.output;
  }
  const TraceCounts f = counts_of(conv_json);
  EXPECT_EQ(f.nodes_by_op, (std::map<std::string, size_t>{{"Conv", w.nodes_by_op["Conv"]}}));
  EXPECT_EQ(f.runs, 3u) << "runs are kept";
  if (with_device) {
    EXPECT_GT(w.device_by_op["Conv"], 0u);
    EXPECT_EQ(f.device_by_op, (std::map<std::string, size_t>{{"Conv", w.device_by_op["Conv"]}}))
        << "device events of kept nodes, all of them, and no others";
  }
  const uint64_t left_out = w.host_events + w.device_events - f.host_events - f.device_events;
  EXPECT_GT(left_out, 0u);
  EXPECT_EQ(f.filtered_events, std::to_string(left_out));
  EXPECT_TRUE(contains(f.filter, "\"op_types\":[\"Conv\"]")) << f.filter;
  EXPECT_TRUE(contains(r.output, "filtered")) << r.output;
  EXPECT_EQ(left_out_in(r.output), std::to_string(left_out)) << r.output;
  EXPECT_TRUE(server.output().find("events left out") != std::string::npos) << server.output();
}

TEST(CaptureCli, AFilteredCaptureHoldsOnlyTheMatchingNodesAndTheRuns) {
  TempDir dir;
  Server server(dir, {}, "serve", kModels + "/cnn.onnx");
  ASSERT_TRUE(server.ready()) << server.output();
  expect_conv_only(server, dir, ".json", false);
  expect_conv_only(server, dir, ".db", false);
  // Several filters, AND-combined: Conv nodes whose name matches nothing.
  const std::string none = dir.file("none.json");
  const auto r = capture(server, {"--runs", "1", "--output", none, "--op-types", "Conv", "--node-regex",
                                  "no such node", "--categories", "session,node,memory"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_valid(none);
  const TraceCounts c = counts_of(none);
  EXPECT_TRUE(c.nodes_by_op.empty());
  EXPECT_EQ(c.runs, 1u);
  EXPECT_TRUE(contains(c.filter, "\"categories\":[\"session\",\"node\",\"memory\"]")) << c.filter;
  EXPECT_TRUE(contains(c.filter, "\"node_name_regex\":\"no such node\"")) << c.filter;
}

#ifdef EPPROF_HAVE_OPENCL_EP
TEST(CaptureCli, AFilteredCaptureOnTheOpenClEpKeepsTheDeviceWorkOfKeptNodesOnly) {
  TempDir dir;
  Server server(dir, {"--ep", "opencl,cpu"}, "serve", kModels + "/cnn.onnx");
  ASSERT_TRUE(server.ready()) << server.output();
  if (contains(server.output(), "not used")) GTEST_SKIP() << "the OpenCL EP is refused here: " << server.output();
  expect_conv_only(server, dir, ".json", true);
}
#endif

TEST(CaptureCli, BadFilterOptionsAreUsageErrors) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--op-types"}, "--op-types needs a comma-separated list"},
      {{"--op-types", ""}, "--op-types needs a comma-separated list"},
      {{"--op-types", "Conv,,Relu"}, "--op-types 'Conv,,Relu' has an empty name"},
      {{"--nodes", "a", "--nodes", "b"}, "--nodes is given twice"},
      {{"--categories", "node,device"}, "--categories: 'device' is not a category (one of session, node, kernel, api, "
                                        "memcpy, counter, memory)"},
      {{"--node-regex", "("}, "--node-regex '(' is not a valid ECMAScript regular expression"},
      {{"--kernel-regex", "[b-a]"}, "--kernel-regex '[b-a]' is not a valid ECMAScript regular expression"},
      {{"--eps", std::string(2000, 'x')}, "--eps: a name is longer than 1024 bytes"},
  };
  for (const auto& [args, message] : cases) {
    std::string cmd = epprof::testing::shell_quote(kCli) + " capture 1";
    for (const auto& a : args) cmd += " " + epprof::testing::shell_quote(a);
    const auto r = epprof::testing::run_shell(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, message)) << cmd << "\n" << r.output;
  }
  // Lists too long for one request line are refused before connecting.
  std::string many;
  for (int i = 0; i < 100; ++i) many += (i ? "," : "") + std::string(1000, 'a' + i % 26);
  TempDir dir;
  const auto big = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture 1 --output " +
                                              dir.file("t.json") + " --op-types " + many);
  EXPECT_EQ(big.exit_code, 1) << big.output;
  EXPECT_TRUE(contains(big.output, "more than a listener takes (65536)")) << big.output;
  const auto help = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* flag : {"--op-types LIST", "--nodes LIST", "--node-regex RE", "--eps LIST", "--kernel-regex RE",
                           "--categories LIST", "always kept", "e.g. epprof capture"})
    EXPECT_TRUE(contains(help.output, flag)) << flag;
}

TEST(CaptureCli, AnotherUidIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run the client as another uid (nobody)";
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  if (epprof::testing::run_shell(as_nobody + "test -x " + epprof::testing::shell_quote(kCli)).exit_code != 0)
    GTEST_SKIP() << "uid 65534 cannot run " << kCli << " (or setpriv is missing)";
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  Server server(dir);
  ASSERT_TRUE(server.ready()) << server.output();
  const std::string out = "/tmp/epprof-capture-nobody-" + std::to_string(getpid()) + ".json";
  // The directory (0700) keeps nobody from even reaching the socket.
  auto r = capture(server, {"--runs", "1", "--output", out}, as_nobody);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "belongs to another user")) << r.output;
  // Opened up by hand (the listener never does), SO_PEERCRED still refuses.
  ASSERT_EQ(chmod(server.socket_dir().c_str(), 0711), 0);
  ASSERT_EQ(chmod(server.socket().c_str(), 0666), 0);
  r = capture(server, {"--runs", "1", "--output", out}, as_nobody);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "refused: uid 65534 may not capture pid " + std::to_string(server.pid()))) << r.output;
  EXPECT_TRUE(server.proc().wait_for("refused a connection from pid")) << server.output();
  EXPECT_FALSE(fs::exists(out));
  // The owner still captures.
  r = capture(server, {"--runs", "1", "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

int connect_raw(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string reply_line(int fd) {
  std::string out;
  char c;
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 5000) > 0 && recv(fd, &c, 1, 0) == 1 && c != '\n') out += c;
  return out;
}

TEST(CaptureCli, MalformedRequestsAndAStalledClientLeaveTheHostServing) {
  TempDir dir;
  Server server(dir);
  ASSERT_TRUE(server.ready()) << server.output();
  for (const std::string& bad : std::vector<std::string>{"hello\n", "{\"runs\":\"x\",\"output\":\"/t\"}\n", "[]\n", "{}\n",
                                std::string(70 * 1024, '{')}) {
    const int fd = connect_raw(server.socket());
    ASSERT_GE(fd, 0);
    (void)!send(fd, bad.data(), bad.size(), MSG_NOSIGNAL);
    const std::string reply = reply_line(fd);
    EXPECT_TRUE(contains(reply, "\"event\":\"error\"") && contains(reply, "bad request")) << reply;
    close(fd);
  }
  // Stalled: connected, says nothing, stays connected during the capture.
  const int stalled = connect_raw(server.socket());
  ASSERT_GE(stalled, 0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = capture(server, {"--runs", "2", "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4)) << "the stalled client held the capture";
  EXPECT_EQ(count_named(epprof::testing::read_trace(dir.file("t.json")), "model_run"), 2u);
  close(stalled);
  EXPECT_EQ(kill(server.pid(), 0), 0) << "the host died";
}

TEST(CaptureCli, ASecondCaptureIsRefusedWhileOneRuns) {
  TempDir dir;
  Server server(dir, {"--pause", "20"});
  ASSERT_TRUE(server.ready()) << server.output();
  Proc first({"capture", std::to_string(server.pid()), "--socket-dir", server.socket_dir(), "--runs", "40", "--output",
              dir.file("first.json")},
             dir.file("first.log"));
  ASSERT_TRUE(first.wait_for("capturing")) << first.output();
  const auto r = capture(server, {"--runs", "1", "--output", dir.file("second.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "a capture of pid " + std::to_string(server.pid()) + " is already in progress"))
      << r.output;
  EXPECT_EQ(first.wait(), 0) << first.output();
  EXPECT_EQ(count_named(epprof::testing::read_trace(dir.file("first.json")), "model_run"), 40u);
  EXPECT_FALSE(fs::exists(dir.file("second.json")));
}

bool has_temporary(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (contains(e.path().filename().string(), ".tmp")) return true;
  return false;
}

TEST(CaptureCli, AHostKilledMidCaptureLeavesNoTraceAndTheClientIsTold) {
  TempDir dir;
  fs::create_directory(dir.path() / "out");
  for (const char* ext : {".json", ".db"}) {
    Server server(dir, {"--pause", "20"}, std::string("serve") + ext);
    ASSERT_TRUE(server.ready()) << server.output();
    const std::string trace = dir.file(std::string("out/t") + ext);
    Proc client({"capture", std::to_string(server.pid()), "--socket-dir", server.socket_dir(), "--runs", "1000",
                 "--output", trace},
                dir.file("client.log"));
    ASSERT_TRUE(client.wait_for("capturing")) << client.output();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(kill(server.pid(), SIGKILL), 0);
    EXPECT_EQ(client.wait(), 1);
    EXPECT_TRUE(contains(client.output(), "exited before the capture completed; no trace was written"))
        << client.output();
    EXPECT_FALSE(fs::exists(trace));
    EXPECT_FALSE(has_temporary(dir.path() / "out"));
  }
}

TEST(CaptureCli, AHostStoppedBySignalMidCaptureWritesNoTraceAndSaysWhy) {
  TempDir dir;
  Server server(dir, {"--pause", "20"});
  ASSERT_TRUE(server.ready()) << server.output();
  Proc client({"capture", std::to_string(server.pid()), "--socket-dir", server.socket_dir(), "--runs", "1000",
               "--output", dir.file("t.json")},
              dir.file("client.log"));
  ASSERT_TRUE(client.wait_for("capturing")) << client.output();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  EXPECT_EQ(client.wait(), 1);
  EXPECT_TRUE(contains(client.output(), "was stopped by SIGTERM before the capture completed; no trace was written"))
      << client.output();
  EXPECT_EQ(server.proc().wait(), 0) << server.output();
  EXPECT_FALSE(fs::exists(dir.file("t.json")));
}

TEST(CaptureCli, AStaleSocketOfAKilledHostIsReplacedOnRestart) {
  TempDir dir;
  pid_t old_pid;
  std::string old_socket;
  {
    Server killed(dir, {}, "killed");
    ASSERT_TRUE(killed.ready()) << killed.output();
    old_pid = killed.pid();
    old_socket = killed.socket();
    ASSERT_EQ(kill(old_pid, SIGKILL), 0);
    killed.proc().wait();
  }
  ASSERT_TRUE(fs::exists(fs::symlink_status(old_socket))) << "SIGKILL should leave the socket file";
  auto r = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture " + std::to_string(old_pid) +
                                      " --socket-dir " + dir.file("sock"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "no such process: " + std::to_string(old_pid))) << r.output;

  Server restarted(dir, {}, "restarted");
  ASSERT_TRUE(restarted.ready()) << restarted.output();
  EXPECT_FALSE(fs::exists(fs::symlink_status(old_socket))) << "the stale socket was not swept";
  r = capture(restarted, {"--runs", "1", "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CaptureCli, ClearErrorsWithoutAListener) {
  TempDir dir;
  // A live process without a listener: this test.
  auto r = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture " + std::to_string(getpid()) +
                                      " --socket-dir " + dir.path().string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "has no capture listener")) << r.output;
  r = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture");
  EXPECT_EQ(r.exit_code, 2);
  r = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture 1 --runs 2 --duration 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "exclude each other")) << r.output;
  r = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture 1 --output " + dir.path().string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "directory")) << r.output;
  r = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " run --serve --runs 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "--serve and --runs exclude each other")) << r.output;
  r = epprof::testing::run_shell(epprof::testing::shell_quote(kCli) + " capture --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "usage: epprof capture PID")) << r.output;
}

}  // namespace
