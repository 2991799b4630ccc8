// epprof_ort_bench: epprof's reference runtime against ONNX Runtime 1.30
// (onnxruntime-node, installed in the model cache by scripts/fetch_models.sh)
// on the bundled models and the real models of the cache (issue 14). See
// "epprof_ort_bench" in bench/README.md for the columns and targets.
//
// ONNX Runtime runs in one long-lived node process (bench/ort_worker.js) that
// this binary drives over a pipe; each model's runs alternate, in blocks,
// between the two runtimes in rotating order, so both see the same machine
// state. The ORT worker times each run itself, so the pipe is not in its
// timings.
//
// --gap DIR: where the time goes, op by op, at 1 thread and at 2. Per model
// and thread count, ONNX Runtime's own profile and epprof's trace of the
// same runs are written to DIR and compared by `epprof diff` (ONNX
// Runtime's fused and reordered nodes show as ops only one side has).
//
// epprof's thread count: the 1- and 2-thread columns are sessions with
// SessionOptions::intra_op_threads 1 and 2 (the sequential executor runs
// one kernel at a time; the setting sizes the session's intra-op pool,
// across which Conv and the gemms split their work).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "bench_models.h"
#include "epprof/rt/blas.h"
#include "epprof/rt/profiling.h"
#include "floor_observer.h"
#include "op_times.h"
#include "observer_runs.h"

extern char** environ;

namespace {

using namespace epprof::rt;
using namespace epprof::bench;

// ---- ONNX Runtime's side: bench/ort_worker.js over a pipe ----------------

class OrtWorker {
 public:
  // Starts `node ort_worker.js ORT_DIR`; throws with the reason when node or
  // ONNX Runtime cannot be started.
  OrtWorker(const std::string& node, const std::string& script, const std::string& ort_dir) {
    int to[2], from[2];
    if (pipe(to) || pipe(from)) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    for (int fd : {to[0], to[1], from[0], from[1]}) posix_spawn_file_actions_addclose(&fa, fd);
    std::vector<char*> argv = {const_cast<char*>(node.c_str()), const_cast<char*>(script.c_str()),
                               const_cast<char*>(ort_dir.c_str()), nullptr};
    const int err = posix_spawnp(&pid_, node.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    to_ = to[1];
    from_ = fdopen(from[0], "r");
    if (err) {
      pid_ = -1;
      throw std::runtime_error("cannot start '" + node + "': " + std::strerror(err));
    }
    const std::string hello = line();
    if (hello.rfind("ready ", 0) != 0)
      throw std::runtime_error(hello.empty() ? "'" + node + " " + script + "' exited without a word"
                                             : hello.substr(hello.rfind("error ", 0) == 0 ? 6 : 0));
    version_ = hello.substr(6);
  }
  ~OrtWorker() {
    if (to_ >= 0) close(to_);
    if (from_) std::fclose(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  OrtWorker(const OrtWorker&) = delete;
  OrtWorker& operator=(const OrtWorker&) = delete;

  const std::string& version() const { return version_; }

  // Sends one command; returns what follows "ok", throws the worker's error.
  std::string command(const std::string& cmd) {
    const std::string text = cmd + "\n";
    if (write(to_, text.data(), text.size()) != ssize_t(text.size()))
      throw std::runtime_error("the ONNX Runtime worker is gone");
    const std::string reply = line();
    if (reply == "ok" || reply.rfind("ok ", 0) == 0) return reply.size() > 3 ? reply.substr(3) : "";
    if (reply.empty()) throw std::runtime_error("ONNX Runtime: the worker exited");
    throw std::runtime_error("ONNX Runtime: " + reply.substr(reply.rfind("error ", 0) == 0 ? 6 : 0));
  }

  std::vector<double> run(int threads, int n) {
    std::istringstream ms(command("run\t" + std::to_string(threads) + "\t" + std::to_string(n)));
    std::vector<double> v;
    for (double t; ms >> t;) v.push_back(t);
    if (int(v.size()) != n) throw std::runtime_error("ONNX Runtime: short reply to run");
    return v;
  }

  // One run's outputs by name.
  std::map<std::string, Tensor> outputs(int threads) {
    const int count = std::stoi(command("outputs\t" + std::to_string(threads)));
    std::map<std::string, Tensor> out;
    for (int i = 0; i < count; ++i) {
      std::istringstream h(line());
      int type = 0;
      size_t rank = 0, bytes = 0, name_bytes = 0;
      h >> type >> rank;
      Shape shape(rank);
      for (auto& d : shape) h >> d;
      h >> bytes >> name_bytes;
      std::string name(name_bytes, '\0');
      if (!h || std::fread(name.data(), 1, name_bytes, from_) != name_bytes)
        throw std::runtime_error("ONNX Runtime: bad output header");
      if (!is_supported_type(type))
        throw std::runtime_error("ONNX Runtime: output " + name + " has an unsupported type");
      Tensor t(DataType(type), shape);
      if (t.byte_size() != bytes || std::fread(t.raw_mutable(), 1, bytes, from_) != bytes)
        throw std::runtime_error("ONNX Runtime: short output " + name);
      out[name] = t;
    }
    return out;
  }

 private:
  std::string line() {
    std::string s;
    for (int c; (c = std::fgetc(from_)) != EOF && c != '\n';) s += char(c);
    return s;
  }
  pid_t pid_ = -1;
  int to_ = -1;
  FILE* from_ = nullptr;
  std::string version_;
};

// ---- models ----------------------------------------------------------------

bool has_conv(const std::vector<Node>& nodes) {
  for (const Node& n : nodes) {
    if (n.op_type == "Conv") return true;
    for (const auto& [key, a] : n.attributes)
      if (a.graph && has_conv(a.graph->nodes)) return true;
  }
  return false;
}

void make_dir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) && errno != EEXIST)
    throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
}

// The bundled (and diagnostic) models' inputs, from the fixed seed of
// random_inputs(), written once per run as TensorProto files in DIR/<model>/
// for ONNX Runtime to read (and anyone to rerun: `epprof run --input`).
void write_inputs(ModelRef& m, const Session& s, const std::string& dir) {
  m.inputs = random_inputs(s);
  make_dir(dir);
  make_dir(dir + "/" + m.name);
  m.input_files.clear();
  for (size_t k = 0; k < s.inputs().size(); ++k) {
    const std::string& name = s.inputs()[k].name;
    m.input_files.push_back(dir + "/" + m.name + "/input_" + std::to_string(k) + ".pb");
    write_tensor_file(m.input_files.back(), m.inputs.at(name), name);
  }
}

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::Float: return t.data<float>()[i];
    case DataType::Double: return t.data<double>()[i];
    case DataType::Int64: return double(t.data<int64_t>()[i]);
    case DataType::Int32: return t.data<int32_t>()[i];
    case DataType::Uint8: return t.data<uint8_t>()[i];
    case DataType::Int8: return t.data<int8_t>()[i];
    case DataType::Bool: return t.data<bool>()[i];
    case DataType::Float16: return t.data<Float16>()[i].to_float();
    default: throw std::runtime_error(std::string("cannot compare outputs of type ") + type_name(t.dtype()));
  }
}

// max |a - b| / (|b| + 1e-3) over every output element, a epprof's, b ONNX Runtime's.
double max_rel_error(const Session& s, const std::vector<Tensor>& ours, const std::map<std::string, Tensor>& theirs) {
  double worst = 0;
  for (size_t k = 0; k < ours.size(); ++k) {
    const std::string& name = s.outputs()[k].name;
    const auto it = theirs.find(name);
    if (it == theirs.end()) throw std::runtime_error("ONNX Runtime has no output " + name);
    const Tensor &a = ours[k], &b = it->second;
    if (a.shape() != b.shape())
      throw std::runtime_error("output " + name + ": epprof " + a.description() + ", ONNX Runtime " + b.description());
    for (int64_t i = 0; i < a.size(); ++i) {
      const double x = element(a, i), y = element(b, i);
      const double e = std::isnan(x) && std::isnan(y) ? 0 : std::fabs(x - y) / (std::fabs(y) + 1e-3);
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
  }
  return worst;
}

// ---- measuring -------------------------------------------------------------

struct Row {
  std::string model;
  bool conv = false, diagnostic = false, ort = false;
  double e1 = 0, e2 = 0, o1 = 0, o2 = 0;  // medians, ms
  double prof = 0, floor = 0;             // on/off, paired (observer_runs.h)
  double err = NAN;
  int runs = 0;
  std::string ort_error;  // ONNX Runtime failed on this model
  std::string gap;        // --gap: the op-by-op comparison
  std::string scaling;    // a conv model below ONNX Runtime's 2-thread speed-up: where its time goes
};

constexpr int kGapRuns = 40, kGapSkip = 5;  // --gap: profiled runs, of which the first are warm-up

// `epprof diff ORT EPPROF --by op` of one model's runs with `threads`
// intra-op threads on both sides (see --gap).
std::string gap_report(const ModelRef& model, OrtWorker& ort, const std::string& dir, int threads) {
  const std::string base = dir + "/" + model.name + "." + std::to_string(threads) + "t";
  const std::string ort_profile =
      ort.command("profile\t" + std::to_string(threads) + "\t" + std::to_string(kGapRuns) + "\t" + base + ".ort");
  const std::string ours = base + ".epprof.json";
  {
    ProfilingOptions po;
    po.trace_path = ours;
    ProfilingObserver profiler(po);
    SessionOptions o;
    o.intra_op_threads = threads;
    o.observer = &profiler;
    Session s(model.path, o);
    for (int i = 0; i < kGapRuns; ++i) s.run(model.inputs);
    profiler.finish();
  }
  const std::string cmd = std::string("'") + EPPROF_BENCH_CLI + "' diff '" + ort_profile + "' '" + ours +
                          "' --by op --top 8 --skip-runs " + std::to_string(kGapSkip) + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    if (pclose(p) != 0) out += "(epprof diff failed)\n";
  }
  return "  " + std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") + ": A = ONNX Runtime (" +
         ort_profile + "), B = epprof (" + ours + ")\n" + out;
}

// For a conv model whose 2-thread speed-up is below ONNX Runtime's
// (`ort_x2`): each op's time per run in the 1- and 2-thread sessions
// (OpTimes, exclusive of nested nodes) for about `budget_ms`, the ops that
// did not speed up, and the time between the nodes, beside the ones that
// did. The timing costs both sessions a per-node timeline's floor alike.
std::string scaling_report(Session& one, Session& two, const std::map<std::string, Tensor>& in, double run_ms,
                           double budget_ms, double ort_x2) {
  // Blocks of each session's runs, alternating, as the table's streams
  // run: interleaved run by run, the two sessions' weights took turns in
  // the caches (Silero VAD's Convs then took longer at 2 threads than at 1).
  // Each block's first run is not timed.
  OpTimes t1, t2;
  constexpr int kBlock = 10;
  const int rounds = std::clamp(int(budget_ms / ((kBlock + 1) * run_ms * 2)), 4, 1000);
  RunOptions timed1, timed2;
  timed1.observer = &t1;
  timed2.observer = &t2;
  for (int round = 0; round < rounds; ++round)
    for (auto [session, timed] : {std::pair{&one, &timed1}, {&two, &timed2}}) {
      session->run(in);
      for (int k = 0; k < kBlock; ++k) session->run(in, *timed);
    }
  const double tick_ns = ns_per_tick();
  const OpTimes::Medians m1 = t1.medians(tick_ns), m2 = t2.medians(tick_ns);
  auto at_two = [&](const std::string& op) {
    const auto it = m2.ops.find(op);
    return it == m2.ops.end() ? 0.0 : it->second;
  };
  std::vector<std::pair<double, std::string>> by_time;
  for (const auto& [op, us] : m1.ops) by_time.push_back({us, op});
  std::sort(by_time.rbegin(), by_time.rend());
  std::string out;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "  where the time goes (2-thread speed-up %.2f, ONNX Runtime's %.2f): us, medians over %d runs of "
                "each session in alternating blocks,\n  TSC around each node, exclusive of nested nodes\n"
                "    %-20s %9s %9s %6s %8s\n",
                m1.run / m2.run, ort_x2, rounds * kBlock, "op", "1t us", "2t us", "x2", "1t share");
  out += buf;
  auto row = [&](const std::string& what, double a, double b) {
    std::snprintf(buf, sizeof buf, "    %-20s %9.2f %9.2f %6.2f %7.1f%%\n", what.c_str(), a, b, b > 0 ? a / b : 0,
                  m1.run > 0 ? 100 * a / m1.run : 0);
    out += buf;
  };
  constexpr size_t kShown = 8;
  double rest1 = 0, rest2 = 0;
  for (size_t i = 0; i < by_time.size(); ++i) {
    if (i < kShown) {
      row(by_time[i].second, by_time[i].first, at_two(by_time[i].second));
    } else {
      rest1 += by_time[i].first, rest2 += at_two(by_time[i].second);
    }
  }
  if (by_time.size() > kShown) row("(" + std::to_string(by_time.size() - kShown) + " other ops)", rest1, rest2);
  row("(between the nodes)", m1.between, m2.between);
  row("run", m1.run, m2.run);
  return out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The streams, each a median: e1 epprof with 1 thread, profiling off; o1
// ONNX Runtime with 1 intra-op thread; e2 / o2 the same with 2; and, for
// the profiler's cost, i1/p1/f1 epprof with 1 thread, profiling off, on and
// with the floor of any per-node timeline (FloorObserver), each a run's
// observer of the 1-thread session, interleaved by time_settings() as
// epprof_runtime_bench does (observer_runs.h). One round runs five blocks,
// about `k` recorded runs of each stream: epprof 1 thread, ORT 1, the
// off/on/floor settings, epprof 2, ORT 2, in an order that rotates from
// round to round. Each runtime's timed streams are runs of one session back
// to back, as ONNX Runtime's are in its worker.
Row measure(ModelRef& model, OrtWorker* ort, const std::string& inputs_dir, double budget_s, int min_runs,
            int max_runs, const std::string& gap_dir) {
  Row r;
  r.model = model.name;
  r.diagnostic = model.name == "relu_1";
  const std::string trace = "/tmp/epprof_ort_bench_" + std::to_string(getpid()) + ".json";
  ProfilingOptions po;
  po.trace_path = trace;
  std::vector<double> e1, i1, p1, f1, o1, e2, o2;
  {
    ProfilingObserver profiler(po);
    FloorObserver floor_observer;
    SessionOptions one_thread, two_threads;
    one_thread.intra_op_threads = 1;
    two_threads.intra_op_threads = 2;
    Session off(model.path, one_thread), off2(model.path, two_threads);
    r.conv = has_conv(off.nodes());
    if (!model.real) write_inputs(model, off, inputs_dir);
    const auto& in = model.inputs;
    if (ort) {
      try {
        std::string cmd = "load\t" + model.path;
        for (const auto& f : model.input_files) cmd += "\t" + f;
        ort->command(cmd);
        r.ort = true;
      } catch (const std::exception& e) {
        r.ort_error = e.what();
      }
    }
    // Every block starts with one unrecorded run of each of its streams: the
    // first run after the other runtime's block pays for waking this one's
    // threads (OpenBLAS's workers sleep when idle, and on a loaded 2-core
    // machine a woken one can wait milliseconds for a CPU) and for caches the
    // other runtime evicted. The medians are of steady-state runs.
    // One block of epprof streams: each one's unrecorded first run, then k
    // runs of each in turn; which goes first rotates (across blocks too: a
    // block may hold one turn), so none always runs on a warmer cache.
    struct Stream {
      Session* session;
      std::vector<double>* times;
    };
    int turns = 0;
    auto epprof_block = [&](const std::vector<Stream>& streams, int k) {
      for (const Stream& s : streams) s.session->run(in);
      for (int i = 0; i < k; ++i) {
        const size_t first = size_t(turns++) % streams.size();
        for (size_t j = 0; j < streams.size(); ++j) {
          const Stream& s = streams[(first + j) % streams.size()];
          const auto t0 = std::chrono::steady_clock::now();
          s.session->run(in);
          s.times->push_back(ms_since(t0));
        }
      }
    };
    std::vector<std::function<void(int)>> blocks = {
        [&](int k) { epprof_block({{&off, &e1}}, k); },
        [&](int k) {  // the profiler's cost: about k recorded runs of each setting, two a round
          const auto t = time_settings({{&off, nullptr}, {&off, &profiler}, {&off, &floor_observer}}, in, (k + 1) / 2);
          for (auto [times, v] : {std::pair{&t[0], &i1}, {&t[1], &p1}, {&t[2], &f1}})
            v->insert(v->end(), times->begin(), times->end());
        },
        [&](int k) { epprof_block({{&off2, &e2}}, k); },
    };
    auto ort_block = [&](int threads, int k, std::vector<double>& t) {
      const auto v = ort->run(threads, k + 1);
      t.insert(t.end(), v.begin() + 1, v.end());
    };
    if (r.ort) {
      blocks.insert(blocks.begin() + 1, [&](int k) { ort_block(1, k, o1); });
      blocks.push_back([&](int k) { ort_block(2, k, o2); });
    }
    // Warm-up, excluded: 5 runs of every stream; their medians size the rounds.
    for (auto& b : blocks) b(5);
    const double round_ms = 5.5 * median(e1) + median(e2) + (r.ort ? median(o1) + median(o2) : 0);
    for (auto* v : {&e1, &i1, &p1, &f1, &o1, &e2, &o2}) v->clear();
    const int total = std::max(min_runs, std::min(max_runs, int(budget_s * 1e3 / round_ms)));
    const int k = std::max(1, total / 20), rounds = (total + k - 1) / k;
    for (int round = 0; round < rounds; ++round)
      for (size_t b = 0; b < blocks.size(); ++b) blocks[(b + round) % blocks.size()](k);
    r.runs = rounds * k;
    if (r.ort && r.conv) {
      const double e1_ms = median(e1), ort_x2 = median(o1) / median(o2);
      if (e1_ms / median(e2) < ort_x2) r.scaling = scaling_report(off, off2, in, e1_ms, budget_s * 1e3 / 4, ort_x2);
    }
    if (r.ort) {
      try {
        r.err = max_rel_error(off, off.run(in), ort->outputs(1));
      } catch (const std::exception& e) {
        r.ort_error = std::string("outputs not compared: ") + e.what();
      }
      if (!gap_dir.empty()) {
        try {
          r.gap = gap_report(model, *ort, gap_dir, 1) + gap_report(model, *ort, gap_dir, 2);
        } catch (const std::exception& e) {
          r.gap = std::string("  no comparison: ") + e.what() + "\n";
        }
      }
      ort->command("free");
    }
    profiler.finish();
  }
  std::remove(trace.c_str());
  r.e1 = median(e1);
  r.prof = paired_ratio(p1, i1);
  r.floor = paired_ratio(f1, i1);
  r.e2 = median(e2);
  if (r.ort) {
    r.o1 = median(o1);
    r.o2 = median(o2);
  }
  return r;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = EPPROF_BENCH_MODELS_DIR, inputs_dir = EPPROF_BENCH_INPUTS_DIR;
  std::string cache = default_model_cache(), node = "node", only, gap_dir;
  double budget_s = 8;
  int min_runs = 20, max_runs = 20000;
  bool real = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) budget_s = 0.05, min_runs = 3;
    else if (!std::strcmp(argv[i], "--budget") && i + 1 < argc) budget_s = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--models") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--model-cache") && i + 1 < argc) cache = argv[++i];
    else if (!std::strcmp(argv[i], "--inputs-dir") && i + 1 < argc) inputs_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--node") && i + 1 < argc) node = argv[++i];
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--bundled-only")) real = false;
    else if (!std::strcmp(argv[i], "--gap") && i + 1 < argc) gap_dir = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: epprof_ort_bench [--quick] [--budget SECONDS] [--only MODEL] [--bundled-only] "
                   "[--gap DIR] [--models DIR] [--model-cache DIR] [--inputs-dir DIR] [--node PATH]\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);  // a worker that died is reported by the write, not by a signal
  if (!gap_dir.empty()) make_dir(gap_dir);

  std::vector<ModelRef> models;
  for (const char* name : {"mlp", "cnn", "transformer"})
    models.push_back({name, dir + "/" + name + ".onnx", {}, false, {}});
  std::unique_ptr<OrtWorker> ort;
  std::string ort_status;
  try {
    ort = std::make_unique<OrtWorker>(node, EPPROF_BENCH_ORT_WORKER, cache + "/ort/node_modules/onnxruntime-node");
    ort_status = "ONNX Runtime " + ort->version() + " (onnxruntime-node, " + cache + "/ort)";
  } catch (const std::exception& e) {
    ort_status = std::string("ONNX Runtime not available, its columns are skipped: ") + e.what() +
                 " (scripts/fetch_models.sh installs it; node from --node, default 'node' on PATH)";
  }
  std::printf("epprof_ort_bench: epprof (sequential executor, CPU EP, profiling off) vs %s\n", ort_status.c_str());
  std::printf("ORT sessions: CPU EP, intraOpNumThreads 1 / 2, interOpNumThreads 1, executionMode sequential, "
              "default graph optimisations (all)\nepprof sessions: intra_op_threads 1 / 2, OpenBLAS kernels %s; "
              "%.3g s per model; %ld CPUs, load average %s\n\n",
              epprof::rt::blas_kernels().c_str(), budget_s, sysconf(_SC_NPROCESSORS_ONLN), load_average().c_str());
  bool ok = true;
  if (real) {
    try {
      for (auto& m : real_models(cache)) models.push_back(std::move(m));
    } catch (const std::exception& e) {
      std::printf("real models skipped: %s\n\n", e.what());
    }
  }
  // One Relu on [1,1]: each runtime's fixed cost per call (ONNX Runtime's
  // includes the node binding's tensor conversion). A diagnostic row,
  // outside the verdicts; written beside the bundled models' inputs.
  try {
    make_dir(inputs_dir);
    const std::string path = inputs_dir + "/relu_1.onnx";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << relu_chain_model(1, 1);
    models.push_back({"relu_1", path, {}, false, {}});
  } catch (const std::exception& e) {
    std::printf("relu_1 skipped: %s\n\n", e.what());
  }
  std::printf("%-20s %9s %9s %7s %9s %9s %7s %7s %10s %8s %8s %7s\n", "model", "epprof 1t", "ORT 1t", "ratio",
              "epprof 2t", "ORT 2t", "ep x2", "ORT x2", "max rel err", "prof", "floor", "runs");
  std::printf("%-20s %9s %9s %7s %9s %9s %7s %7s %10s %8s %8s %7s\n", "", "ms", "ms", "ep/ORT", "ms", "ms", "", "",
              "", "on/off", "on/off", "");
  std::vector<Row> rows;
  for (ModelRef& m : models) {
    if (!only.empty() && only != m.name) continue;
    try {
      Row r = measure(m, ort.get(), inputs_dir, budget_s, min_runs, max_runs, gap_dir);
      const std::string name = r.model + (r.conv ? "*" : "");
      if (r.ort)
        std::printf("%-20s %9.4f %9.4f %7.3f %9.4f %9.4f %7.2f %7.2f %10.2e %8.4f %8.4f %7d\n", name.c_str(), r.e1,
                    r.o1, r.e1 / r.o1, r.e2, r.o2, r.e1 / r.e2, r.o1 / r.o2, r.err, r.prof, r.floor, r.runs);
      else
        std::printf("%-20s %9.4f %9s %7s %9.4f %9s %7.2f %7s %10s %8.4f %8.4f %7d\n", name.c_str(), r.e1, "-", "-",
                    r.e2, "-", r.e1 / r.e2, "-", "-", r.prof, r.floor, r.runs);
      if (!r.ort_error.empty()) {
        std::printf("  %s: %s\n", r.model.c_str(), r.ort_error.c_str());
        ok = false;
      }
      if (!r.scaling.empty()) std::printf("%s", r.scaling.c_str());
      if (!r.gap.empty()) std::printf("%s\n", r.gap.c_str());
      std::fflush(stdout);
      rows.push_back(r);
    } catch (const std::exception& e) {
      std::printf("%-20s not run: %s\n", m.name.c_str(), e.what());
      ok = false;
    }
  }

  // Verdicts: every measured model but the diagnostic row.
  double log_sum = 0, worst_ratio = 0, worst_prof = 0;
  int n = 0;
  std::string worst_model, worst_prof_model, slower_x2, prof_over;
  int conv_models = 0;
  for (const Row& r : rows) {
    if (r.diagnostic) continue;
    if (r.prof > worst_prof) worst_prof = r.prof, worst_prof_model = r.model;
    if (r.prof > 1.03) {
      char buf[160];
      // '*': the floor observer is over the target too, in the same runs.
      std::snprintf(buf, sizeof buf, "%s%s %.3f (floor %.3f%s)", prof_over.empty() ? "" : ", ", r.model.c_str(),
                    r.prof, r.floor, r.floor > 1.03 ? "*" : "");
      prof_over += buf;
    }
    if (!r.ort) continue;
    const double ratio = r.e1 / r.o1;
    log_sum += std::log(ratio);
    ++n;
    if (ratio > worst_ratio) worst_ratio = ratio, worst_model = r.model;
    if (r.conv) {
      ++conv_models;
      if (r.e1 / r.e2 < r.o1 / r.o2) slower_x2 += (slower_x2.empty() ? "" : ", ") + r.model;
    }
  }
  // One line per target: what, the measured value, the target, the verdict.
  auto line = [](const std::string& what, const std::string& value, const std::string& target, bool pass,
                 const std::string& note = "") {
    std::printf("%-58s %7s   %-8s %s%s\n", what.c_str(), value.c_str(), target.c_str(), pass ? "PASS" : "MISS",
                note.c_str());
  };
  auto fixed = [](double v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string(buf);
  };
  std::printf("\n");
  if (n) {
    const double geomean = std::exp(log_sum / n);
    line("geometric mean of the 1-thread ratio (" + std::to_string(n) + " models)", fixed(geomean, 3), "<= 1.2",
         geomean <= 1.2);
    line("worst 1-thread ratio (" + worst_model + ")", fixed(worst_ratio, 3), "<= 1.5", worst_ratio <= 1.5);
    const int below = slower_x2.empty() ? 0 : int(std::count(slower_x2.begin(), slower_x2.end(), ',')) + 1;
    line("conv models (*) whose 2-thread speed-up >= ONNX Runtime's", std::to_string(conv_models - below),
         "all " + std::to_string(conv_models), below == 0, below ? "   below: " + slower_x2 : "");
  } else {
    std::printf("no ONNX Runtime timings: the ratio targets are not judged\n");
  }
  if (!worst_prof_model.empty()) {
    line("worst profiling on/off (" + worst_prof_model + ")", fixed(worst_prof, 4), "<= 1.03", worst_prof <= 1.03);
    if (!prof_over.empty())
      std::printf("  above 1.03: %s\n"
                  "  (*: the floor is above 1.03 as well: no per-node timeline met it in these runs)\n",
                  prof_over.c_str());
  }
  std::printf(
      "\nratio: epprof 1t / ORT 1t (medians). ep x2 / ORT x2: 1-thread / 2-thread median, each runtime's speed-up.\n"
      "Each of these is a stream of one session's runs back to back, as ONNX Runtime's are.\n"
      "max rel err: max |a - b| / (|b| + 1e-3) over every output element, a epprof's, b ONNX Runtime's (1 thread).\n"
      "prof on/off: epprof with a ProfilingObserver / without, 1 thread: runs of the 1-thread session with\n"
      "the profiler as the run's observer and without, interleaved in shuffled streaks; the median over the\n"
      "rounds of the streaks of on's time over off's in the same round (bench/observer_runs.h).\n"
      "floor on/off: the same with the least any per-node timeline costs instead of the profiler (two TSC reads\n"
      "and a 16-byte store per node execution and per run), in the same interleaved runs.\n"
      "runs: timed runs per stream, after 5 warm-up runs each; blocks of the two runtimes alternate in rotating\n"
      "order, each block's first run unrecorded.\n"
      "relu_1: one Relu on [1,1], each runtime's fixed cost per call (ORT's includes the node binding); not in "
      "the verdicts.\n"
      "inputs: real models, the cache's reference inputs; bundled ones, fixed-seed inputs written to %s.\n",
      inputs_dir.c_str());
  return ok ? 0 : 1;
}
