// Issue 15: the epprof command line under bad paths, bad traces and signals.
// Black-box: the binary is run as a user runs it. Each test here failed on
// the code before the issue was fixed (see the comment on each).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace {

namespace fs = std::filesystem;
using epprof::testing::TempDir;

const std::string kModels = EPPROF_MODELS_DIR;

// EPPROF_TEST_CLI and EPPROF_TEST_EXAMPLE_PLUGIN run these tests against
// another build, e.g. the one before a fix, to see them fail there.
std::string from_env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
const std::string kCli = from_env("EPPROF_TEST_CLI", EPPROF_CLI_PATH);
const std::string kExamplePlugin = from_env("EPPROF_TEST_EXAMPLE_PLUGIN", EPPROF_EXAMPLE_PLUGIN_PATH);

using Result = epprof::testing::ShellResult;

using epprof::testing::shell_quote;

// Runs `[prefix] epprof ARGS...` through sh, under a timeout so that a
// command blocked on a FIFO fails the test instead of hanging it.
Result epprof(const std::vector<std::string>& args, const std::string& prefix = "") {
  std::string cmd = prefix + "timeout -s KILL 60 " + shell_quote(kCli);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return epprof::testing::run_shell(cmd);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool has_temporary(const fs::path& dir) {
  for (const auto& name : entries(dir))
    if (name.find(".tmp") != std::string::npos) return true;
  return false;
}

std::string copy_model(const TempDir& dir, const std::string& name = "m.onnx") {
  const std::string path = dir.file(name);
  fs::copy_file(kModels + "/mlp.onnx", path);
  return path;
}

// A small valid epprof trace, written by `epprof run`.
std::string make_trace(const TempDir& dir, const std::string& name = "t.json") {
  const std::string path = dir.file(name);
  const Result r = epprof({"run", kModels + "/mlp.onnx", "--runs", "2", "--warmup", "0", "--no-table", "--output", path});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return path;
}

// ---- item 1: output paths ------------------------------------------------

// Before: the model was overwritten with the trace, without a word.
TEST(OutputPaths, RunRefusesTheModelAsItsOutput) {
  TempDir dir;
  const std::string model = copy_model(dir);
  const std::string before = read_file(model);
  for (const std::string& out : {model, dir.file("./m.onnx")}) {
    const Result r = epprof({"run", model, "--runs", "1", "--output", out});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("it is the input '" + model + "'"), std::string::npos) << r.output;
  }
  EXPECT_EQ(read_file(model), before);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"m.onnx"});
}

// Before: the per-run trace replaced the model it was named like.
TEST(OutputPaths, RunRefusesAPerRunTraceThatIsTheModel) {
  TempDir dir;
  const std::string model = copy_model(dir, "t.run1.json");
  const std::string before = read_file(model);
  const Result r = epprof({"run", model, "--runs", "1", "--warmup", "0", "--run-profiling", "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("it is the input"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(model), before);
  EXPECT_FALSE(has_temporary(dir.path()));
}

// Before: the symlink was replaced by a regular file; its target kept the old data.
TEST(OutputPaths, RunFollowsASymlinkAndReplacesItsTarget) {
  TempDir dir;
  fs::create_directory(dir.path() / "real");
  write_file(dir.file("real/trace.json"), "old");
  fs::create_symlink("real/trace.json", dir.path() / "link.json");
  const Result r = epprof({"run", kModels + "/mlp.onnx", "--runs", "1", "--no-table", "--output", dir.file("link.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir.path() / "link.json"));
  EXPECT_NE(read_file(dir.file("real/trace.json")).find("model_run"), std::string::npos);
  EXPECT_EQ(entries(dir.path() / "real"), std::vector<std::string>{"trace.json"});
}

// Before: the FIFO was replaced by a regular file.
TEST(OutputPaths, RunDemoReportAndMergeRefuseAFifo) {
  TempDir dir;
  const std::string trace = make_trace(dir);
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const std::vector<std::vector<std::string>> commands = {
      {"run", kModels + "/mlp.onnx", "--runs", "1", "--output", fifo},
      {"demo", "--events", "10", "--output", fifo},
      {"report", trace, "-o", fifo},
      {"merge", trace, "-o", fifo}};
  for (const auto& args : commands) {
    const Result r = epprof(args);
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find("'" + fifo + "': it is a FIFO"), std::string::npos) << args[0] << ": " << r.output;
    struct stat st;
    ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode)) << args[0] << " replaced the FIFO";
  }
  EXPECT_FALSE(has_temporary(dir.path()));
}

// Before: the device node became a JSON file.
TEST(OutputPaths, RunRefusesADeviceNode) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod of a device node needs root";
  TempDir dir;
  const std::string dev = dir.file("null");
  ASSERT_EQ(mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  const Result r = epprof({"run", kModels + "/mlp.onnx", "--runs", "1", "--output", dev});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("it is a character device"), std::string::npos) << r.output;
  struct stat st;
  ASSERT_EQ(lstat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// Before: report -o and merge -o overwrote their own input.
TEST(OutputPaths, ReportAndMergeRefuseTheirInput) {
  TempDir dir;
  const std::string trace = make_trace(dir);
  const std::string before = read_file(trace);
  for (const auto& args : std::vector<std::vector<std::string>>{{"report", trace, "-o", trace},
                                                                {"merge", trace, trace, "-o", trace}}) {
    const Result r = epprof(args);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("it is the input '" + trace + "'"), std::string::npos) << r.output;
  }
  EXPECT_EQ(read_file(trace), before);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"t.json"});
}

// Before: --save-outputs wrote through a FIFO (and blocked) or replaced it.
TEST(OutputPaths, SaveOutputsRefusesAFifo) {
  TempDir dir;
  const std::string out = dir.file("out");
  Result r = epprof({"run", kModels + "/mlp.onnx", "--runs", "1", "--no-profile", "--save-outputs", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> saved = entries(out);
  ASSERT_FALSE(saved.empty());
  const std::string target = out + "/" + saved[0];
  fs::remove(target);
  ASSERT_EQ(mkfifo(target.c_str(), 0644), 0);
  r = epprof({"run", kModels + "/mlp.onnx", "--runs", "1", "--no-profile", "--save-outputs", out});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("it is a FIFO"), std::string::npos) << r.output;
}

// ---- item 9: errors name the path and the reason -------------------------

// Before: "write error" and a 0-byte file.
TEST(OutputPaths, ReportOnAFullDiskNamesThePathAndTheReasonAndLeavesNothing) {
  TempDir dir;
  const std::string trace = make_trace(dir);
  const std::string out = dir.file("out.html");
  // A 4 KiB file size limit stands in for a full disk: write(2) fails with
  // EFBIG once SIGXFSZ is ignored.
  const Result r = epprof({"report", trace, "--format", "html", "-o", out}, "ulimit -f 4; trap '' XFSZ; ");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("'" + out + "'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::strerror(EFBIG)), std::string::npos) << r.output;
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"t.json"});
}

// Before: a failed run left the per-run traces of the runs before it and no
// session trace at all. Now the session trace holds the completed runs and
// says which run failed; the failed run has no per-run trace.
TEST(OutputPaths, AFailedRunStillWritesTheSessionTraceMarkedFailed) {
  TempDir dir;
  // A TensorProto: dims [2, 2], FLOAT, raw_data of 4 floats; the MLP wants [32, 784].
  write_file(dir.file("bad.pb"), std::string("\x08\x02\x08\x02\x10\x01\x4a\x10", 8) + std::string(16, '\0'));
  const Result r = epprof({"run", kModels + "/mlp.onnx", "--input", "input=" + dir.file("bad.pb"), "--runs", "2",
                           "--run-profiling", "--output", dir.file("t.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("run 1 failed: "), std::string::npos) << r.output;
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"bad.pb", "t.json"}));
  EXPECT_EQ(epprof({"validate", dir.file("t.json")}).exit_code, 0);
  std::string failed;
  for (const auto& e : epprof::testing::read_trace(dir.file("t.json")))
    if (e.name == "epprof_metadata") failed = e.arg("failed");
  EXPECT_NE(failed.find("run 1 failed: "), std::string::npos) << failed;
}

// Before: "write to fd 3 failed: File too large" named no file.
TEST(OutputPaths, RunOnAFullDiskNamesThePathAndTheReasonAndLeavesNothing) {
  TempDir dir;
  const std::string out = dir.file("t.json");
  const Result r = epprof({"run", kModels + "/mlp.onnx", "--runs", "20", "--no-table", "--output", out},
                          "ulimit -f 8; trap '' XFSZ; ");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write trace '" + out + "': " + std::strerror(EFBIG)), std::string::npos)
      << r.output;
  EXPECT_TRUE(entries(dir.path()).empty());
}

// ---- item 5: signals -----------------------------------------------------

// Starts `epprof ARGS...` with stdout and stderr to `log`.
pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  dup2(fd, 2);
  std::vector<char*> argv = {const_cast<char*>(kCli.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(kCli.c_str(), argv.data());
  _exit(127);
}

// Waits up to 60 s; the exit code, 256 + signal if killed, -1 on timeout.
int wait_for(pid_t pid) {
  for (int i = 0; i < 6000; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 256 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Before: the process died at once, no trace, a 0-byte temporary left.
TEST(Signals, FirstSigintWritesTheCompletedRunsMarkedInterrupted) {
  TempDir dir;
  const std::string trace = dir.file("t.json");
  const pid_t pid = spawn({"run", kModels + "/mlp.onnx", "--runs", "1000000", "--warmup", "1", "--output", trace},
                          dir.file("log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_for(pid), 128 + SIGINT) << read_file(dir.file("log"));
  ASSERT_TRUE(fs::exists(trace)) << read_file(dir.file("log"));
  const Result v = epprof({"validate", trace});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  int runs = 0, completed = -1;
  std::string interrupted;
  for (const auto& e : epprof::testing::read_trace(trace)) {
    if (e.name == "model_run" && e.ph == "X") ++runs;
    if (e.name == "epprof_metadata") {
      interrupted = e.arg("interrupted");
      completed = std::atoi(e.arg("runs_completed").c_str());
    }
  }
  EXPECT_EQ(interrupted, "SIGINT");
  EXPECT_GE(runs, 1);
  EXPECT_EQ(runs, completed);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"log", "t.json"}));
}

// Before: a 0-byte temporary was left. The second signal must not wait for
// the trace, and must leave no temporary.
TEST(Signals, SecondSigtermStopsAtOnceAndLeavesNoTemporary) {
  TempDir dir;
  const pid_t pid = spawn({"run", kModels + "/mlp.onnx", "--runs", "1000000", "--run-profiling", "--output",
                           dir.file("t.json")},
                          dir.file("log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGTERM);
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_for(pid), 128 + SIGTERM) << read_file(dir.file("log"));
  EXPECT_FALSE(has_temporary(dir.path())) << ::testing::PrintToString(entries(dir.path()));
}

// Before: SIGTERM killed them (no exit status); merge could leave its
// "<out>.tmp.<pid>". A FIFO that nobody writes keeps each one reading.
TEST(Signals, ReportMergeAndValidateExitAtOnceWith128PlusTheSignal) {
  for (const std::string command : {"report", "merge", "validate"}) {
    TempDir dir;
    const std::string fifo = dir.file("in.json");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    std::vector<std::string> args = {command, fifo};
    if (command == "report") args.insert(args.end(), {"--format", "html", "-o", dir.file("out.html")});
    if (command == "merge") args.insert(args.end(), {fifo, "-o", dir.file("out.json")});
    const pid_t pid = spawn(args, dir.file("log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(pid, SIGTERM);
    EXPECT_EQ(wait_for(pid), 128 + SIGTERM) << command << ": " << read_file(dir.file("log"));
    EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"in.json", "log"})) << command;
  }
}

// ---- items 6 and 7: malformed JSON, overlapping slices --------------------

const char* const kMalformedArgs =
    "[{\"cat\":\"Session\",\"name\":\"model_run\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10,\"args\":{}},\n"
    "{\"cat\":\"Node\",\"name\":\"n\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2,"
    "\"args\":{\"op_name\":\"Relu\",\"input_type_shape\":[{\"float\">[32]}]}}]\n";

// Before: validate said valid; merge copied the bad bytes and exited 0.
TEST(Traces, MalformedArgsAreRefusedWithTheByteOffset) {
  TempDir dir;
  const std::string bad = dir.file("bad.json");
  write_file(bad, kMalformedArgs);
  const std::string offset = "at byte " + std::to_string(std::string(kMalformedArgs).find("{\"cat\":\"Node\""));
  Result r = epprof({"validate", bad});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("json: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(offset), std::string::npos) << r.output;
  r = epprof({"report", bad});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(offset), std::string::npos) << r.output;
  const std::string good = make_trace(dir);
  r = epprof({"merge", good, bad, "-o", dir.file("merged.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(offset), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("merged.json")));
}

// Before: validate passed it.
TEST(Traces, ValidateReportsPartialOverlapOnATrack) {
  TempDir dir;
  const std::string path = dir.file("overlap.json");
  write_file(path,
             "[{\"cat\":\"Kernel\",\"name\":\"a\",\"ph\":\"X\",\"pid\":2,\"tid\":0,\"ts\":10,\"dur\":10,\"args\":{}},\n"
             "{\"cat\":\"Kernel\",\"name\":\"b\",\"ph\":\"X\",\"pid\":2,\"tid\":0,\"ts\":15,\"dur\":10,\"args\":{}},\n"
             "{\"cat\":\"Kernel\",\"name\":\"nested\",\"ph\":\"X\",\"pid\":2,\"tid\":0,\"ts\":16,\"dur\":2,\"args\":{}},\n"
             "{\"cat\":\"Kernel\",\"name\":\"other track\",\"ph\":\"X\",\"pid\":2,\"tid\":1,\"ts\":12,\"dur\":20,\"args\":{}}]\n");
  const Result r = epprof({"validate", path});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("overlap: event #1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 violation (overlap 1)"), std::string::npos) << r.output;
}

// Before: the demo's trace had 6 nesting violations and the plugin's device
// track overlapping slices.
TEST(Traces, DemoAndExamplePluginTracesValidateClean) {
  TempDir dir;
  Result r = epprof({"demo", "--threads", "4", "--events", "200", "--output", dir.file("demo.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = epprof({"validate", dir.file("demo.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = epprof({"run", kModels + "/cnn.onnx", "--runs", "3", "--executor", "parallel", "--no-table", "--plugin",
              kExamplePlugin, "--output", dir.file("run.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = epprof({"validate", dir.file("run.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Item 8: a name with an embedded NUL keeps its length through report
// (text keeps the byte; HTML, where NUL is not allowed, shows it as \x00)
// and merge (escaped as \u0000 again).
TEST(Traces, NamesWithNulKeepTheirLengthThroughReportAndMerge) {
  TempDir dir;
  const std::string trace = dir.file("nul.json");
  write_file(trace,
             "[{\"cat\":\"__metadata\",\"name\":\"epprof_metadata\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"ts\":0,"
             "\"args\":{\"t0_epoch_ns\":\"1\"}},\n"
             "{\"cat\":\"Session\",\"name\":\"model_run\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10,\"args\":{}},\n"
             "{\"cat\":\"Node\",\"name\":\"conv\\u0000one_kernel_time\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,"
             "\"dur\":2,\"args\":{\"op_name\":\"Conv\"}}]\n");
  Result r = epprof({"report", trace, "--by", "node"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("conv\0one", 8)), std::string::npos) << r.output;
  r = epprof({"report", trace, "--by", "node", "--format", "html", "-o", dir.file("r.html")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string html = read_file(dir.file("r.html"));
  EXPECT_NE(html.find("conv\\x00one"), std::string::npos);
  EXPECT_EQ(html.find('\0'), std::string::npos) << "a raw NUL in the HTML";
  r = epprof({"merge", trace, "-o", dir.file("merged.json")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(read_file(dir.file("merged.json")).find("\"conv\\u0000one_kernel_time\""), std::string::npos);
}

}  // namespace
