// Helpers shared by the test suites: status checking, temporary
// directories, and reading a written trace with simdjson (a parser
// independent of epprof's writer).
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "epprof/epprof.h"

namespace epprof::testing {

// Takes ownership of `s`; returns its code (EPPROF_OK for NULL) and message.
struct StatusResult {
  epprof_status_code code;
  std::string message;
};
inline StatusResult take(epprof_status* s) {
  StatusResult r{epprof_status_get_code(s), epprof_status_get_message(s)};
  epprof_status_release(s);
  return r;
}

#define EPPROF_ASSERT_OK(expr)                                             \
  do {                                                                     \
    auto _r = ::epprof::testing::take(expr);                               \
    ASSERT_EQ(_r.code, EPPROF_OK) << #expr << ": " << _r.message;          \
  } while (0)

#define EPPROF_EXPECT_OK(expr)                                             \
  do {                                                                     \
    auto _r = ::epprof::testing::take(expr);                               \
    EXPECT_EQ(_r.code, EPPROF_OK) << #expr << ": " << _r.message;          \
  } while (0)

// A temporary file, open for writing as `fd`, removed at scope exit.
struct TempFile {
  std::string path;
  int fd = -1;
  TempFile() {
    path = (std::filesystem::temp_directory_path() / "epprof-test-file-XXXXXX").string();
    fd = mkstemp(path.data());
    EXPECT_GE(fd, 0) << std::strerror(errno);
  }
  ~TempFile() {
    if (fd >= 0) close(fd);
    unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string contents() const {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
};

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "epprof-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline epprof_name_id name_id(const char* s) {
  epprof_name_id id = 0;
  epprof_status* st = epprof_intern(s, &id);
  epprof_status_release(st);
  return id;
}

// An arg set of `args` that declares the node {name, op_type, index, ep}
// (epprof_node_args_intern): the arg a NODE event carries so that its
// device work is attributed to the node. 0 if interning failed.
inline epprof_arg_set_id node_set(const char* name, const char* op_type, uint32_t index, const char* ep = nullptr,
                                  const epprof_arg* args = nullptr, size_t num_args = 0) {
  epprof_node_desc node{};
  node.size = sizeof node;
  node.name = name_id(name);
  node.op_type = name_id(op_type);
  node.index = index;
  node.ep = ep ? name_id(ep) : 0;
  epprof_arg_set_id id = 0;
  epprof_status_release(epprof_node_args_intern(&node, args, num_args, &id));
  return id;
}

// The arg that carries set `id`.
inline epprof_arg set_arg(epprof_arg_set_id id) {
  epprof_arg a{0, EPPROF_ARG_SET, {}};
  a.value.set = id;
  return a;
}

inline epprof_profiler_config config_for(const std::string& path) {
  epprof_profiler_config c{};
  c.size = sizeof c;
  c.trace_path = path.c_str();
  return c;
}

// One parsed trace event, with the fields tests look at.
struct TraceEvent {
  std::string cat, name, ph;
  int64_t pid = 0, tid = 0;
  double ts = 0, dur = 0;
  bool has_dur = false;
  uint64_t flow_id = 0;
  std::vector<std::pair<std::string, std::string>> args;  // string-valued args only
  std::string args_json;                                   // all of args, minified JSON
  std::string arg(const std::string& k) const {
    for (auto& a : args)
      if (a.first == k) return a.second;
    return {};
  }
  bool has_arg(const std::string& k) const {
    for (auto& a : args)
      if (a.first == k) return true;
    return false;
  }
};

// Parses a trace file; fails the test (and returns empty) if it is not a
// JSON array of objects that each have cat, name, pid, tid, ts, ph.
std::vector<TraceEvent> read_trace(const std::string& path);

// The string fields a plugin recorded in the trace's metadata record
// (epprof_metadata's plugins.<plugin>).
std::map<std::string, std::string> plugin_metadata(const std::vector<TraceEvent>& trace, const std::string& plugin);

// A fixture with a created (not started) profiler writing to a temporary
// trace file, destroyed after the test.
class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("trace.json");
    auto c = config_for(path_);
    EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p_));
  }
  void TearDown() override { epprof_status_release(epprof_profiler_destroy(p_)); }

  // Stops the profiler (expecting success) and reads its trace.
  std::vector<TraceEvent> stop_and_read(epprof_trace_stats* stats = nullptr) {
    EXPECT_EQ(take(epprof_profiler_stop(p_, stats)).code, EPPROF_OK);
    return read_trace(path_);
  }

  TempDir dir_;
  std::string path_;
  epprof_profiler_t p_{};
};

// A shell command's exit status (-1: killed by a signal) and its stdout and
// stderr together.
struct ShellResult {
  int exit_code = -1;
  std::string output;
};
ShellResult run_shell(const std::string& command);
// `s` as one single-quoted shell word.
std::string shell_quote(const std::string& s);

}  // namespace epprof::testing
