// Issue 14, threads: SessionOptions::intra_op_threads governs all intra-op
// parallelism (the session's intra-op pool, src/intra_op.*; OpenBLAS itself
// stays at one thread), inter_op_threads the parallel executor's pool. Observed through
// /proc/self/task/*/stat: which threads of this process accumulate CPU time
// while a session runs a large MatMul.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "epprof/rt/session.h"
#include "test_models.h"

extern "C" int openblas_get_num_threads(void);
extern "C" void openblas_set_num_threads(int num_threads);

namespace {

using namespace epprof::rt;
namespace rtt = epprof::rt::testing;

// utime + stime (clock ticks) of every thread of this process, by tid.
std::map<int, long> thread_cpu_ticks() {
  std::map<int, long> out;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string f;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i) {  // field 3 is the state; 14 utime, 15 stime
      if (i == 14) utime = std::stol(f);
      if (i == 15) stime = std::stol(f);
    }
    out[std::stoi(e->d_name)] = utime + stime;
  }
  closedir(dir);
  return out;
}

int this_tid() { return static_cast<int>(syscall(SYS_gettid)); }

// Y = X · W with X [n, n] an input and W [n, n] an initializer: one sgemm.
std::string matmul_model(int64_t n) {
  auto m = rtt::make_model();
  rtt::add_io(m, true, "X", {n, n});
  rtt::add_io(m, false, "Y", {n, n});
  std::vector<float> w(static_cast<size_t>(n * n));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& v : w) v = dist(rng);
  rtt::add_float_init(m, "W", {n, n}, w);
  rtt::add_node(m, "MatMul", "mm", {"X", "W"}, {"Y"});
  return m.SerializeAsString();
}

std::map<std::string, Tensor> matmul_input(int64_t n) {
  Tensor x(DataType::Float, {n, n});
  for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = float(i % 7) * 0.25f - 0.75f;
  return {{"X", x}};
}

struct CpuSplit {
  long caller = 0;     // ticks of the thread that called run()
  long others = 0;     // ticks of every other thread of the process
  long busiest_other = 0;
};

// Runs `s` on the calling thread for at least `seconds` of wall time and
// says which threads the CPU time went to. OpenBLAS's idle workers spin for
// a while after their last job: a pause first lets earlier tests' settle.
CpuSplit measure_runs(Session& s, const std::map<std::string, Tensor>& in, double seconds) {
  s.run(in);  // warm-up: sets OpenBLAS's thread count, touches the buffers
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto before = thread_cpu_ticks();
  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  while (runs < 3 || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    s.run(in);
    ++runs;
  }
  const auto after = thread_cpu_ticks();
  CpuSplit split;
  const int self = this_tid();
  for (const auto& [tid, ticks] : after) {
    auto b = before.find(tid);
    const long delta = ticks - (b == before.end() ? 0 : b->second);
    if (tid == self) {
      split.caller = delta;
    } else {
      split.others += delta;
      split.busiest_other = std::max(split.busiest_other, delta);
    }
  }
  return split;
}

constexpr int64_t kN = 768;  // ~0.9 GFLOP per run: tens of milliseconds on one core

TEST(Threads, OneIntraOpThreadRunsAMatMulOnTheCallingThreadAlone) {
  SessionOptions so;
  so.intra_op_threads = 1;
  Session s = Session::from_bytes(matmul_model(kN), so);
  EXPECT_EQ(s.intra_op_threads(), 1);
  EXPECT_EQ(s.inter_op_threads(), 0);  // the sequential executor has no pool
  const CpuSplit cpu = measure_runs(s, matmul_input(kN), 0.6);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  EXPECT_GE(cpu.caller, 20) << "the runs took too little CPU time to judge";
  // Clock ticks are 10 ms: allow a stray tick or two of other threads.
  EXPECT_LE(cpu.others, 3) << "other threads of the process worked while intra_op_threads = 1 (caller "
                           << cpu.caller << " ticks)";
}

TEST(Threads, TwoIntraOpThreadsPutAnotherThreadToWork) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: no second thread can run at once";
  SessionOptions so;
  so.intra_op_threads = 2;
  Session s = Session::from_bytes(matmul_model(kN), so);
  EXPECT_EQ(s.intra_op_threads(), 2);
  const CpuSplit cpu = measure_runs(s, matmul_input(kN), 0.6);
  EXPECT_EQ(openblas_get_num_threads(), 1);  // the session's pool splits the gemm, not OpenBLAS
  EXPECT_GE(cpu.busiest_other, 10) << "no other thread worked with intra_op_threads = 2 (caller " << cpu.caller
                                   << " ticks)";
}

TEST(Threads, EveryRunKeepsOpenBlasAtOneThread) {
  // OpenBLAS's count is process-global: a run sets it back to 1 whatever
  // the host set, so its threads never compete with the session's pool.
  SessionOptions one, two;
  one.intra_op_threads = 1;
  two.intra_op_threads = 2;
  Session a = Session::from_bytes(matmul_model(64), two);
  Session b = Session::from_bytes(matmul_model(64), one);
  const auto in = matmul_input(64);
  for (int i = 0; i < 3; ++i) {
    openblas_set_num_threads(2);
    a.run(in);
    EXPECT_EQ(openblas_get_num_threads(), 1);
    openblas_set_num_threads(2);
    b.run(in);
    EXPECT_EQ(openblas_get_num_threads(), 1);
  }
  // And after a 2-thread session, a 1-thread one still works alone.
  if (std::thread::hardware_concurrency() >= 2) {
    Session big_two = Session::from_bytes(matmul_model(kN), two);
    big_two.run(matmul_input(kN));
    Session big_one = Session::from_bytes(matmul_model(kN), one);
    const CpuSplit cpu = measure_runs(big_one, matmul_input(kN), 0.4);
    EXPECT_LE(cpu.others, 3) << "caller " << cpu.caller << " ticks";
  }
}

TEST(Threads, DefaultsFollowOnnxRuntime) {
  const int d = default_intra_op_threads();
  EXPECT_GE(d, 1);
  EXPECT_LE(d, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  Session seq = Session::from_bytes(matmul_model(8));
  EXPECT_EQ(seq.intra_op_threads(), d);
  EXPECT_EQ(seq.inter_op_threads(), 0);
  SessionOptions po;
  po.executor = ExecutorKind::Parallel;
  Session par = Session::from_bytes(matmul_model(8), po);
  EXPECT_EQ(par.intra_op_threads(), d);
  EXPECT_EQ(par.inter_op_threads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(Threads, InterAndIntraOpThreadsAreSeparateSettings) {
  SessionOptions po;
  po.executor = ExecutorKind::Parallel;
  po.inter_op_threads = 3;
  po.intra_op_threads = 1;
  Session par = Session::from_bytes(matmul_model(64), po);
  EXPECT_EQ(par.inter_op_threads(), 3);
  EXPECT_EQ(par.intra_op_threads(), 1);
  par.run(matmul_input(64));
  EXPECT_EQ(openblas_get_num_threads(), 1);
  // The sequential executor has no pool: inter_op_threads is ignored.
  SessionOptions so;
  so.inter_op_threads = 3;
  Session seq = Session::from_bytes(matmul_model(64), so);
  EXPECT_EQ(seq.inter_op_threads(), 0);
}

TEST(Threads, OutOfRangeSettingsAreRefused) {
  for (auto [intra, inter] : {std::pair{-1, 0}, std::pair{0, -2}, std::pair{SessionOptions::kMaxThreads + 1, 0},
                              std::pair{0, SessionOptions::kMaxThreads + 1}}) {
    SessionOptions so;
    so.intra_op_threads = intra;
    so.inter_op_threads = inter;
    try {
      Session::from_bytes(matmul_model(8), so);
      ADD_FAILURE() << "accepted intra " << intra << ", inter " << inter;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadOption);
      EXPECT_NE(e.message().find(intra ? "intra_op_threads" : "inter_op_threads"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
