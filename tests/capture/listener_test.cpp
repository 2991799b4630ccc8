// The capture listener (src/capture/) in process: request parsing, the
// socket directory's checks, SO_PEERCRED, and the protocol through the
// public C API, driven by raw socket clients.
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capture/listener.h"
#include "capture/request.h"
#include "epprof/epprof.h"
#include "support/test_util.h"

namespace {

namespace fs = std::filesystem;
using epprof::capture::parse_request;
using epprof::capture::Request;
using epprof::testing::take;
using epprof::testing::TempDir;

// ---- request parsing ----

TEST(CaptureRequest, ParsesRunsDurationOutputAndScope) {
  Request r;
  std::string error;
  ASSERT_TRUE(parse_request(R"({"runs":3,"output":"/tmp/t.json"})", &r, &error)) << error;
  EXPECT_EQ(r.runs, 3u);
  EXPECT_EQ(r.duration_ms, 0);
  EXPECT_EQ(r.output, "/tmp/t.json");
  EXPECT_EQ(r.scope_name, "capture");
  ASSERT_TRUE(parse_request(R"( {"protocol":1,"duration_ms":250,"output":"/a/b.db","scope_name":"warm \"q\""} )", &r,
                            &error))
      << error;
  EXPECT_EQ(r.runs, 0u);
  EXPECT_EQ(r.duration_ms, 250);
  EXPECT_EQ(r.output, "/a/b.db");
  EXPECT_EQ(r.scope_name, "warm \"q\"");
}

TEST(CaptureRequest, RefusesMalformedRequestsNamingTheProblem) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty request"},
      {"garbage", "not valid JSON"},
      {"{\"runs\":3,", "not valid JSON"},
      {"[1,2]", "must be a JSON object, not an array"},
      {"42", "must be a JSON object"},
      {R"({"output":"/t.json"})", "missing 'runs' or 'duration_ms'"},
      {R"({"runs":1})", "missing 'output'"},
      {R"({"runs":1,"duration_ms":5,"output":"/t"})", "not both"},
      {R"({"runs":0,"output":"/t"})", "'runs' must be an integer in 1..1000000, not 0"},
      {R"({"runs":-3,"output":"/t"})", "not -3"},
      {R"({"runs":2.5,"output":"/t"})", "not 2.5"},
      {R"({"runs":"3","output":"/t"})", "not a string"},
      {R"({"runs":1e30,"output":"/t"})", "'runs' must be an integer"},
      {R"({"runs":18446744073709551615,"output":"/t"})", "'runs' must be an integer"},
      {R"({"runs":null,"output":"/t"})", "not null"},
      {R"({"runs":2000000,"output":"/t"})", "1..1000000"},
      {R"({"duration_ms":0,"output":"/t"})", "'duration_ms' must be an integer in 1..86400000"},
      {R"({"runs":1,"output":5})", "'output' must be a string, not an integer"},
      {R"({"runs":1,"output":"t.json"})", "absolute path"},
      {R"({"runs":1,"output":""})", "absolute path"},
      {R"({"runs":1,"output":"/tmp/"})", "names a directory"},
      {R"({"runs":1,"output":"/t\u0000x"})", "NUL byte"},
      {R"({"runs":1,"output":"/t","output":"/u"})", "duplicate key 'output'"},
      {R"({"runs":1,"output":"/t","bogus":true})", "unknown key \"bogus\""},
      {R"({"runs":1,"output":"/t","protocol":2})", "'protocol' must be an integer in 1..1"},
      {R"({"runs":1,"output":"/t","scope_name":["x"]})", "'scope_name' must be a string, not an array"},
      {"{\"runs\":1,\"output\":\"/t\xff\"}", "not valid JSON"},
  };
  for (const auto& [line, expected] : cases) {
    Request r;
    std::string error;
    EXPECT_FALSE(parse_request(line, &r, &error)) << line;
    EXPECT_NE(error.find(expected), std::string::npos) << "request: " << line << "\nerror: " << error;
  }
  Request r;
  std::string error;
  EXPECT_FALSE(parse_request(std::string(70000, ' '), &r, &error));
  EXPECT_NE(error.find("too long"), std::string::npos) << error;
  const std::string long_scope = R"({"runs":1,"output":"/t","scope_name":")" + std::string(300, 'x') + "\"}";
  EXPECT_FALSE(parse_request(long_scope, &r, &error));
  EXPECT_NE(error.find("longer than 256"), std::string::npos) << error;
}

TEST(CaptureRequest, ParsesAFilter) {
  Request r;
  std::string error;
  ASSERT_TRUE(parse_request(R"({"runs":2,"output":"/t.json","filter":{"categories":["node","kernel","memory"],)"
                            R"("op_types":["Conv","Gemm"],"node_names":["a b"],"node_name_regex":"conv_[0-9]+",)"
                            R"("ep_names":["CPUExecutionProvider"],"kernel_name_regex":".*gemm.*"}})",
                            &r, &error))
      << error;
  const auto& f = r.filter;
  EXPECT_TRUE(f.present);
  EXPECT_EQ(f.categories,
            (1u << EPPROF_CATEGORY_NODE) | (1u << EPPROF_CATEGORY_KERNEL) | (1u << EPPROF_CATEGORY_MEMORY));
  EXPECT_EQ(f.op_types, (std::vector<std::string>{"Conv", "Gemm"}));
  EXPECT_EQ(f.node_names, std::vector<std::string>{"a b"});
  EXPECT_EQ(f.node_name_regex, "conv_[0-9]+");
  EXPECT_EQ(f.ep_names, std::vector<std::string>{"CPUExecutionProvider"});
  EXPECT_EQ(f.kernel_name_regex, ".*gemm.*");
  // Every category the library names is accepted by that name.
  for (uint32_t c = 0; c < EPPROF_CATEGORY_COUNT_; ++c) {
    const std::string line = std::string(R"({"runs":1,"output":"/t","filter":{"categories":[")") +
                             epprof_category_name(epprof_category(c)) + "\"]}}";
    ASSERT_TRUE(parse_request(line, &r, &error)) << error;
    EXPECT_EQ(r.filter.categories, 1u << c);
  }
  // No filter, or one that sets nothing: the trace is whole.
  ASSERT_TRUE(parse_request(R"({"runs":1,"output":"/t","filter":{}})", &r, &error)) << error;
  EXPECT_FALSE(r.filter.present);
  ASSERT_TRUE(parse_request(R"({"runs":1,"output":"/t"})", &r, &error)) << error;
  EXPECT_FALSE(r.filter.present);
}

TEST(CaptureRequest, RefusesMalformedFiltersNamingTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {R"("filter":[])", "'filter' must be an object, not an array"},
      {R"("filter":{"bogus":1})", "unknown key \"filter.bogus\""},
      {R"("filter":{"op_types":["A"],"op_types":["B"]})", "duplicate key 'filter.op_types'"},
      {R"("filter":{"op_types":"Conv"})", "'filter.op_types' must be an array of strings, not a string"},
      {R"("filter":{"op_types":[]})", "'filter.op_types' must list 1..1024 names"},
      {R"("filter":{"node_names":["a",3]})", "'filter.node_names[1]' must be a string, not an integer"},
      {R"("filter":{"ep_names":[""]})", "'filter.ep_names[0]' is empty"},
      {R"("filter":{"op_types":["a\u0000"]})", "'filter.op_types[0]' holds a NUL byte"},
      {R"("filter":{"categories":["node","device"]})", "'filter.categories[1]' is not a category: \"device\""},
      {R"("filter":{"categories":["Node"]})", "known: session, node, kernel, api, memcpy, counter, memory"},
      {R"("filter":{"node_name_regex":"("})", "'filter.node_name_regex' is not a valid ECMAScript regular expression"},
      {R"("filter":{"kernel_name_regex":"[z-a]"})", "'filter.kernel_name_regex' is not a valid"},
      {R"("filter":{"kernel_name_regex":""})", "(it is empty)"},
      {R"("filter":{"node_name_regex":7})", "'filter.node_name_regex' must be a string, not an integer"},
      {R"("filter":{"op_types":[")" + std::string(1100, 'x') + "\"]}",
       "'filter.op_types[0]' is longer than 1024 bytes"},
  };
  for (const auto& [filter, expected] : cases) {
    const std::string line = R"({"runs":1,"output":"/t",)" + filter + "}";
    Request r;
    std::string error;
    EXPECT_FALSE(parse_request(line, &r, &error)) << line;
    EXPECT_NE(error.find(expected), std::string::npos) << "request: " << line << "\nerror: " << error;
  }
}

TEST(CaptureRequest, JsonStringEscapesAndReplacesInvalidUtf8) {
  using epprof::capture::json_string;
  EXPECT_EQ(json_string("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
  EXPECT_EQ(json_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(json_string("x\xff\xc3"), "\"x\xef\xbf\xbd\xef\xbf\xbd\"");
  EXPECT_EQ(json_string("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  // a surrogate
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  EXPECT_EQ(parser.parse(json_string(std::string("\x80\x00\xf4\x90\x80\x80", 6))).get(e), simdjson::SUCCESS);
}

// ---- the directory and the peer check ----

TEST(CaptureDirectory, CreatedPrivateAndUnsafeOnesRefused) {
  TempDir tmp;
  const uid_t uid = geteuid();
  std::string error;
  epprof_status_code code = EPPROF_OK;
  const std::string dir = tmp.file("sock");
  ASSERT_TRUE(epprof::capture::ensure_private_dir(dir, uid, &error, &code)) << error;
  struct stat st;
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_TRUE(epprof::capture::ensure_private_dir(dir, uid, &error, &code)) << error;  // exists: fine

  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  EXPECT_FALSE(epprof::capture::ensure_private_dir(dir, uid, &error, &code));
  EXPECT_EQ(code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(error.find("mode 0755"), std::string::npos) << error;

  fs::create_symlink(dir, tmp.path() / "link");
  EXPECT_FALSE(epprof::capture::ensure_private_dir(tmp.file("link"), uid, &error, &code));
  EXPECT_NE(error.find("is a symlink"), std::string::npos) << error;

  std::ofstream(tmp.file("file")) << "x";
  EXPECT_FALSE(epprof::capture::ensure_private_dir(tmp.file("file"), uid, &error, &code));
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;

  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  EXPECT_FALSE(epprof::capture::ensure_private_dir(dir, uid + 1, &error, &code));
  EXPECT_NE(error.find("belongs to uid"), std::string::npos) << error;

  EXPECT_FALSE(epprof::capture::ensure_private_dir(tmp.file("no/such/parent"), uid, &error, &code));
  EXPECT_EQ(code, EPPROF_IO_ERROR);
}

TEST(CaptureDirectory, DefaultIsXdgRuntimeDirWhenOursElseTmp) {
  TempDir tmp;
  const char* old = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = old ? old : "";
  setenv("XDG_RUNTIME_DIR", tmp.path().c_str(), 1);
  EXPECT_EQ(epprof::capture::default_socket_dir(geteuid()), tmp.file("epprof"));
  EXPECT_EQ(epprof::capture::default_socket_dir(geteuid() + 1), "/tmp/epprof-" + std::to_string(geteuid() + 1));
  setenv("XDG_RUNTIME_DIR", "relative", 1);
  EXPECT_EQ(epprof::capture::default_socket_dir(geteuid()), "/tmp/epprof-" + std::to_string(geteuid()));
  if (old) setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  else unsetenv("XDG_RUNTIME_DIR");
}

TEST(CapturePeer, SoPeerCredNamesTheProcessAndOnlyTheSameUidIsAllowed) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  epprof::capture::PeerCred peer;
  std::string error;
  ASSERT_TRUE(epprof::capture::peer_credentials(sv[0], &peer, &error)) << error;
  EXPECT_EQ(peer.pid, getpid());
  EXPECT_EQ(peer.uid, geteuid());
  EXPECT_TRUE(epprof::capture::peer_allowed(peer, geteuid()));
  EXPECT_FALSE(epprof::capture::peer_allowed(peer, geteuid() + 1));
  close(sv[0]);
  close(sv[1]);
  EXPECT_FALSE(epprof::capture::peer_credentials(-1, &peer, &error));
}

// ---- the listener through the C API ----

// A raw protocol client.
class Client {
 public:
  explicit Client(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    connected_ = connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { close(); }
  bool connected() const { return connected_; }
  void send(const std::string& data) { (void)!::send(fd_, data.data(), data.size(), MSG_NOSIGNAL); }
  // The next line, or "" after timeout_ms or at EOF (eof() tells).
  std::string line(int timeout_ms = 5000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || eof_) return "";
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, int(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) eof_ = true;
      else buf_.append(chunk, size_t(n));
    }
  }
  bool eof() const { return eof_; }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buf_;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool wait_pending(epprof_listener_t l, uint32_t want, int timeout_ms = 5000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (epprof_listener_pending(l) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

class ListenerTest : public ::testing::Test {
 protected:
  void SetUp() override { start(); }
  void TearDown() override {
    if (l_.handle) epprof_status_release(epprof_listener_stop(l_));
  }
  void start(uint32_t request_timeout_ms = 0) {
    epprof_listener_config c{};
    c.size = sizeof c;
    dir_ = tmp_.file("sock");
    c.socket_dir = dir_.c_str();
    c.request_timeout_ms = request_timeout_ms;
    EPPROF_ASSERT_OK(epprof_listener_start(&c, &l_));
    const char* p = nullptr;
    EPPROF_ASSERT_OK(epprof_listener_get_socket_path(l_, &p));
    path_ = p;
  }
  void restart(uint32_t request_timeout_ms) {
    EPPROF_ASSERT_OK(epprof_listener_stop(l_));
    l_ = {};
    start(request_timeout_ms);
  }
  std::string request(uint64_t runs) {
    return "{\"runs\":" + std::to_string(runs) + ",\"output\":\"" + tmp_.file("t.json") + "\"}\n";
  }

  TempDir tmp_;
  std::string dir_, path_;
  epprof_listener_t l_{};
};

TEST_F(ListenerTest, SocketIsOwnerOnlyInAPrivateDirectory) {
  EXPECT_EQ(path_, dir_ + "/epprof-" + std::to_string(getpid()) + ".sock");
  struct stat st;
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(lstat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(ListenerTest, RequestTakeCompleteRoundTrip) {
  EXPECT_EQ(epprof_listener_pending(l_), 0u);
  Client c(path_);
  ASSERT_TRUE(c.connected());
  c.send(R"({"runs":4,"output":"/x/t.json","scope_name":"s"})" "\n");
  const std::string accepted = c.line();
  EXPECT_TRUE(contains(accepted, "\"event\":\"accepted\"")) << accepted;
  EXPECT_TRUE(contains(accepted, "\"pid\":" + std::to_string(getpid()))) << accepted;
  ASSERT_TRUE(wait_pending(l_, 1));

  const int64_t before = epprof_clock_now_ns();
  epprof_capture_request r{};
  r.size = sizeof r;
  EPPROF_ASSERT_OK(epprof_listener_take(l_, &r));
  EXPECT_EQ(epprof_listener_pending(l_), 0u);
  EXPECT_EQ(r.runs, 4u);
  EXPECT_EQ(r.duration_ns, 0);
  EXPECT_STREQ(r.trace_path, "/x/t.json");
  EXPECT_STREQ(r.scope_name, "s");
  EXPECT_EQ(r.client_pid, uint32_t(getpid()));
  EXPECT_EQ(r.client_uid, uint32_t(geteuid()));
  EXPECT_GT(r.received_ns, 0);
  EXPECT_LE(r.received_ns, before);
  EXPECT_TRUE(contains(c.line(), "\"event\":\"started\""));
  // Taking twice: nothing pending.
  epprof_capture_request again{};
  again.size = sizeof again;
  EXPECT_EQ(take(epprof_listener_take(l_, &again)).code, EPPROF_FAILED_PRECONDITION);

  epprof_capture_result res{};
  res.size = sizeof res;
  res.runs = 4;
  res.host_events = 40;
  res.first_run_ns = r.received_ns + 1500000;
  res.summary = "fine";
  EXPECT_EQ(take(epprof_listener_complete(l_, r.request_id + 1, &res)).code, EPPROF_FAILED_PRECONDITION);
  EPPROF_ASSERT_OK(epprof_listener_complete(l_, r.request_id, &res));
  const std::string done = c.line();
  EXPECT_TRUE(contains(done, "\"event\":\"done\"")) << done;
  EXPECT_TRUE(contains(done, "\"trace\":\"/x/t.json\"")) << done;
  EXPECT_TRUE(contains(done, "\"runs\":4,\"host_events\":40")) << done;
  EXPECT_TRUE(contains(done, "\"latency_ns\":1500000")) << done;
  EXPECT_EQ(c.line(1000), "");
  EXPECT_TRUE(c.eof());
  EXPECT_EQ(take(epprof_listener_complete(l_, r.request_id, &res)).code, EPPROF_FAILED_PRECONDITION);
}

// The request's filter reaches the host as an epprof_trace_filter, whole,
// and the done line says how much the trace left out.
TEST_F(ListenerTest, AFilterIsHandedToTheHostAndItsCountToTheClient) {
  Client c(path_);
  c.send(R"({"runs":1,"output":"/x/t.json","filter":{"categories":["node","kernel"],"op_types":["Conv","Relu"],)"
         R"("node_names":["n1"],"node_name_regex":"n.*","ep_names":["E"],"kernel_name_regex":"k.*"}})" "\n");
  EXPECT_TRUE(contains(c.line(), "\"event\":\"accepted\""));
  ASSERT_TRUE(wait_pending(l_, 1));
  epprof_capture_request r{};
  r.size = sizeof r;
  EPPROF_ASSERT_OK(epprof_listener_take(l_, &r));
  ASSERT_NE(r.filter, nullptr);
  const epprof_trace_filter& f = *r.filter;
  EXPECT_EQ(f.size, sizeof f);
  EXPECT_EQ(f.categories, (1u << EPPROF_CATEGORY_NODE) | (1u << EPPROF_CATEGORY_KERNEL));
  ASSERT_EQ(f.num_op_types, 2u);
  EXPECT_STREQ(f.op_types[0], "Conv");
  EXPECT_STREQ(f.op_types[1], "Relu");
  ASSERT_EQ(f.num_node_names, 1u);
  EXPECT_STREQ(f.node_names[0], "n1");
  EXPECT_STREQ(f.node_name_regex, "n.*");
  ASSERT_EQ(f.num_ep_names, 1u);
  EXPECT_STREQ(f.ep_names[0], "E");
  EXPECT_STREQ(f.kernel_name_regex, "k.*");
  // It is what a profiler takes.
  TempDir dir;
  const std::string trace = dir.file("t.json");
  epprof_profiler_config pc{};
  pc.size = sizeof pc;
  pc.trace_path = trace.c_str();
  pc.filter = r.filter;
  epprof_profiler_t p{};
  EPPROF_ASSERT_OK(epprof_profiler_create(&pc, &p));
  EPPROF_EXPECT_OK(epprof_profiler_destroy(p));
  epprof_capture_result res{};
  res.size = sizeof res;
  res.runs = 1;
  res.host_events = 3;
  res.filtered_events = 17;
  EPPROF_ASSERT_OK(epprof_listener_complete(l_, r.request_id, &res));
  c.line();  // started
  const std::string done = c.line();
  EXPECT_TRUE(contains(done, "\"filtered_events\":17")) << done;

  // Without a filter, the host sees none and the client hears no count.
  Client d(path_);
  d.send(request(1));
  ASSERT_TRUE(wait_pending(l_, 1));
  epprof_capture_request plain{};
  plain.size = sizeof plain;
  EPPROF_ASSERT_OK(epprof_listener_take(l_, &plain));
  EXPECT_EQ(plain.filter, nullptr);
  EPPROF_ASSERT_OK(epprof_listener_complete(l_, plain.request_id, &res));
  d.line();  // accepted
  d.line();  // started
  const std::string plain_done = d.line();
  EXPECT_TRUE(contains(plain_done, "\"event\":\"done\"")) << plain_done;
  EXPECT_FALSE(contains(plain_done, "filtered_events")) << plain_done;
}

// A bad filter is refused when the request arrives, before the host sees it.
TEST_F(ListenerTest, ABadFilterIsRefusedAtOnce) {
  Client c(path_);
  c.send(R"({"runs":1,"output":"/x/t.json","filter":{"node_name_regex":"(unclosed"}})" "\n");
  const std::string reply = c.line();
  EXPECT_TRUE(contains(reply, "\"event\":\"error\"")) << reply;
  EXPECT_TRUE(contains(reply, "filter.node_name_regex")) << reply;
  EXPECT_EQ(epprof_listener_pending(l_), 0u);
}

TEST_F(ListenerTest, AHostFailureReachesTheClientAsAnError) {
  Client c(path_);
  c.send(request(1));
  ASSERT_TRUE(contains(c.line(), "accepted"));
  epprof_capture_request r{};
  r.size = sizeof r;
  ASSERT_TRUE(wait_pending(l_, 1));
  EPPROF_ASSERT_OK(epprof_listener_take(l_, &r));
  epprof_capture_result res{};
  res.size = sizeof res;
  res.code = EPPROF_IO_ERROR;
  res.message = "cannot write '/x/t.json'";
  EPPROF_ASSERT_OK(epprof_listener_complete(l_, r.request_id, &res));
  (void)c.line();  // started
  const std::string err = c.line();
  EXPECT_TRUE(contains(err, "\"event\":\"error\"")) << err;
  EXPECT_TRUE(contains(err, "cannot write '/x/t.json' (IO_ERROR)")) << err;
  res.code = 99;
  EXPECT_EQ(take(epprof_listener_complete(l_, r.request_id, &res)).code, EPPROF_INVALID_ARGUMENT);
}

TEST_F(ListenerTest, MalformedRequestsGetErrorRepliesAndTheListenerGoesOn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"garbage\n", "not valid JSON"},
      {"\n", "empty request"},
      {"[1]\n", "must be a JSON object"},
      {R"({"runs":"ten","output":"/t"})" "\n", "'runs' must be an integer"},
      {R"({"runs":1,"output":"rel.json"})" "\n", "absolute path"},
      {std::string("\x00\x01\xff\n", 4), "not valid JSON"},
      {std::string(70000, 'x'), "request too long"},
      {std::string(70000, 'x') + "\n", "request too long"},
  };
  for (const auto& [data, expected] : cases) {
    Client c(path_);
    ASSERT_TRUE(c.connected());
    c.send(data);
    const std::string reply = c.line();
    EXPECT_TRUE(contains(reply, "\"event\":\"error\"")) << reply;
    EXPECT_TRUE(contains(reply, expected)) << "sent " << data.substr(0, 40) << "\nreply " << reply;
    EXPECT_EQ(epprof_listener_pending(l_), 0u);
  }
  // The listener goes on: a request ended by shutting down the writing
  // side (no newline) is accepted.
  Client half(path_);
  const std::string req = request(2);
  half.send(req.substr(0, req.size() - 1));
  half.shutdown_write();
  EXPECT_TRUE(contains(half.line(), "accepted"));
  EXPECT_TRUE(wait_pending(l_, 1));
  // Still waiting after its half-close: the request is not withdrawn.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(epprof_listener_pending(l_), 1u);
}

TEST_F(ListenerTest, AStalledClientBlocksNothingAndTimesOut) {
  restart(300);
  Client stalled(path_);
  ASSERT_TRUE(stalled.connected());
  Client partial(path_);
  partial.send("{\"runs\":");
  const auto t0 = std::chrono::steady_clock::now();
  Client ok(path_);
  ok.send(request(1));
  EXPECT_TRUE(contains(ok.line(), "accepted"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
  const std::string s = stalled.line(3000), p = partial.line(3000);
  EXPECT_TRUE(contains(s, "no complete request within 300 ms")) << s;
  EXPECT_TRUE(contains(p, "no complete request within 300 ms")) << p;
  EXPECT_TRUE(wait_pending(l_, 1));  // the accepted one is not disturbed
}

TEST_F(ListenerTest, ASecondCaptureIsRefusedWhileOneIsPendingOrInProgress) {
  Client first(path_);
  first.send(request(1));
  ASSERT_TRUE(contains(first.line(), "accepted"));
  Client second(path_);
  second.send(request(1));
  std::string reply = second.line();
  EXPECT_TRUE(contains(reply, "a capture of pid " + std::to_string(getpid()) + " is already in progress")) << reply;
  ASSERT_TRUE(wait_pending(l_, 1));
  epprof_capture_request r{};
  r.size = sizeof r;
  EPPROF_ASSERT_OK(epprof_listener_take(l_, &r));
  Client third(path_);
  third.send(request(1));
  reply = third.line();
  EXPECT_TRUE(contains(reply, "already in progress")) << reply;
  // Once the first completes, the next is accepted.
  epprof_capture_result res{};
  res.size = sizeof res;
  EPPROF_ASSERT_OK(epprof_listener_complete(l_, r.request_id, &res));
  Client fourth(path_);
  fourth.send(request(1));
  EXPECT_TRUE(contains(fourth.line(), "accepted"));
}

TEST_F(ListenerTest, AClientThatLeavesBeforeTheRunBoundaryWithdrawsItsRequest) {
  {
    Client c(path_);
    c.send(request(1));
    ASSERT_TRUE(contains(c.line(), "accepted"));
    ASSERT_TRUE(wait_pending(l_, 1));
  }
  EXPECT_TRUE(wait_pending(l_, 0));
  epprof_capture_request r{};
  r.size = sizeof r;
  EXPECT_EQ(take(epprof_listener_take(l_, &r)).code, EPPROF_FAILED_PRECONDITION);
  Client next(path_);
  next.send(request(1));
  EXPECT_TRUE(contains(next.line(), "accepted"));
}

TEST_F(ListenerTest, StopWakesAWaitingClientAndRemovesTheSocket) {
  Client c(path_);
  c.send(request(1));
  ASSERT_TRUE(contains(c.line(), "accepted"));
  ASSERT_TRUE(wait_pending(l_, 1));
  epprof_capture_request r{};
  r.size = sizeof r;
  EPPROF_ASSERT_OK(epprof_listener_take(l_, &r));
  const epprof_listener_t old = l_;
  EPPROF_ASSERT_OK(epprof_listener_stop(l_));
  l_ = {};
  (void)c.line();  // started
  const std::string reply = c.line();
  EXPECT_TRUE(contains(reply, "stopped before the capture completed; no trace was written")) << reply;
  EXPECT_FALSE(fs::exists(fs::symlink_status(path_)));
  // The handle is stale now.
  EXPECT_EQ(epprof_listener_pending(old), 0u);
  EXPECT_EQ(take(epprof_listener_take(old, &r)).code, EPPROF_NOT_FOUND);
  epprof_capture_result res{};
  res.size = sizeof res;
  EXPECT_EQ(take(epprof_listener_complete(old, r.request_id, &res)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_listener_stop(old)).code, EPPROF_NOT_FOUND);
  const char* p = nullptr;
  EXPECT_EQ(take(epprof_listener_get_socket_path(old, &p)).code, EPPROF_NOT_FOUND);
}

TEST_F(ListenerTest, ALiveListenerAtThePathIsAnError) {
  epprof_listener_config c{};
  c.size = sizeof c;
  c.socket_dir = dir_.c_str();
  epprof_listener_t second{};
  const auto r = take(epprof_listener_start(&c, &second));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_TRUE(contains(r.message, "already answers")) << r.message;
  Client still(path_);
  EXPECT_TRUE(still.connected());
}

TEST(Listener, BadArgumentsAndUnsafeDirectories) {
  epprof_listener_t l{};
  EXPECT_EQ(take(epprof_listener_start(nullptr, &l)).code, EPPROF_INVALID_ARGUMENT);
  epprof_listener_config c{};
  EXPECT_EQ(take(epprof_listener_start(&c, &l)).code, EPPROF_INVALID_ARGUMENT);  // size 0
  c.size = sizeof c;
  c.socket_dir = "relative/dir";
  EXPECT_EQ(take(epprof_listener_start(&c, &l)).code, EPPROF_INVALID_ARGUMENT);
  TempDir tmp;
  const std::string open_dir = tmp.file("open");
  ASSERT_EQ(mkdir(open_dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0755), 0);
  c.socket_dir = open_dir.c_str();
  const auto r = take(epprof_listener_start(&c, &l));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_TRUE(contains(r.message, "others can enter it")) << r.message;
  const std::string long_dir = "/" + std::string(120, 'd');
  c.socket_dir = long_dir.c_str();
  EXPECT_NE(take(epprof_listener_start(&c, &l)).code, EPPROF_OK);
  EXPECT_EQ(epprof_listener_pending(epprof_listener_t{}), 0u);
  EXPECT_EQ(epprof_listener_pending(epprof_listener_t{12345}), 0u);
}

// A socket with no listener at our own path: what a killed process with
// our pid (a restarted container's pid 1, say) leaves.
int stale_socket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 1) != 0) return -1;
  close(fd);  // the file stays; connecting is refused
  return 0;
}

TEST(Listener, AStaleSocketIsReplacedAndOnesOfDeadProcessesAreSwept) {
  TempDir tmp;
  const std::string dir = tmp.file("sock");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const std::string own = dir + "/epprof-" + std::to_string(getpid()) + ".sock";
  ASSERT_EQ(stale_socket(own), 0);
  // A dead process's socket.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  const std::string dead = dir + "/epprof-" + std::to_string(child) + ".sock";
  ASSERT_EQ(stale_socket(dead), 0);
  // A live process's socket that refuses connections (bound, not yet
  // listening): kept. Our parent stands in for the live process.
  const std::string live = dir + "/epprof-" + std::to_string(getppid()) + ".sock";
  ASSERT_EQ(stale_socket(live), 0);

  epprof_listener_config c{};
  c.size = sizeof c;
  c.socket_dir = dir.c_str();
  epprof_listener_t l{};
  EPPROF_ASSERT_OK(epprof_listener_start(&c, &l));
  Client client(own);
  EXPECT_TRUE(client.connected());
  EXPECT_FALSE(fs::exists(fs::symlink_status(dead)));
  EXPECT_TRUE(fs::exists(fs::symlink_status(live)));
  EPPROF_EXPECT_OK(epprof_listener_stop(l));
}

TEST(Listener, AFileThatIsNotASocketIsLeftAlone) {
  TempDir tmp;
  const std::string dir = tmp.file("sock");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const std::string own = dir + "/epprof-" + std::to_string(getpid()) + ".sock";
  std::ofstream(own) << "precious";
  epprof_listener_config c{};
  c.size = sizeof c;
  c.socket_dir = dir.c_str();
  epprof_listener_t l{};
  const auto r = take(epprof_listener_start(&c, &l));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_TRUE(contains(r.message, "is not a socket")) << r.message;
  std::ifstream in(own);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious");
}

// Another uid is refused by SO_PEERCRED even when it can reach the socket
// (here the test opens the directory and the socket to everyone, which the
// listener itself never does), and the refusal is logged.
std::mutex g_log_mu;
std::vector<std::string> g_log;
void record_log(void*, epprof_status_code, const char* message) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log.push_back(message);
}

TEST_F(ListenerTest, AnotherUidIsRefusedAndLogged) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another uid (nobody, 65534)";
  epprof_set_log_callback(record_log, nullptr);
  ASSERT_EQ(chmod(tmp_.path().c_str(), 0711), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
  ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t child = fork();
  if (child == 0) {
    ::close(pipefd[0]);
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
      _exit(3);
    Client c(path_);
    if (!c.connected()) _exit(4);
    c.send(request(1));
    const std::string reply = c.line();
    (void)!write(pipefd[1], reply.data(), reply.size());
    _exit(0);
  }
  ::close(pipefd[1]);
  std::string reply;
  char buf[512];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) reply.append(buf, size_t(n));
  ::close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child could not become uid 65534 or connect";
  EXPECT_TRUE(contains(reply, "refused: uid 65534 may not capture pid " + std::to_string(getpid()))) << reply;
  EXPECT_EQ(epprof_listener_pending(l_), 0u);
  epprof_set_log_callback(nullptr, nullptr);
  std::lock_guard<std::mutex> lock(g_log_mu);
  bool logged = false;
  for (const auto& m : g_log) logged |= contains(m, "refused a connection from pid " + std::to_string(child) + " uid 65534");
  EXPECT_TRUE(logged);
}

}  // namespace
