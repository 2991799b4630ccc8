// `epprof run`: the main job. Loads an ONNX model into the reference
// runtime, runs it on the chosen execution providers with libepprof
// profiling the session (and, if asked, each run), writes the trace and
// prints a per-op table read back from it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "epprof/epprof.h"
#include "epprof/rt/blas.h"
#include "epprof/rt/error.h"
#include "epprof/rt/plugin_ep.h"
#include "epprof/rt/profiling.h"
#include "epprof/rt/session.h"
#include "epprof/rt/tensor_io.h"
#include "io/atomic_file.h"
#include "op_table.h"
#include "run_counters.h"
#include "run_inputs.h"
#include "run_serve.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "run";

struct Options {
  std::string model;  // empty: the bundled CNN
  std::vector<std::string> eps = {"cpu"};
  rt::ExecutorKind executor = rt::ExecutorKind::Sequential;
  int threads = 0;           // intra-op; 0: the runtime's default (ONNX Runtime's)
  int inter_op_threads = 0;  // parallel executor's pool; 0: hardware concurrency
  bool fold_constants = true;  // rt::SessionOptions::fold_constants
  bool fuse_nodes = true;      // rt::SessionOptions::fuse_nodes
  int runs = 10;
  int warmup = 1;
  InputOptions inputs;  // --input, --shape, --seed (run_inputs.h)
  std::vector<std::string> plugins;                        // extra EP profiler plugins
  std::string output;
  std::string save_outputs;
  bool run_profiling = false;
  bool profile = true;
  bool integer_timestamps = true;
  epprof_trace_format trace_format = EPPROF_TRACE_FORMAT_AUTO;
  bool memory = false;
  bool table = true;
  CounterOptions counters;  // --counters, --replay (run_counters.h)
  bool serve = false;       // --serve (run_serve.h)
  std::string socket_dir;
  int pause_ms = 0;
  bool runs_given = false;
};

void print_help() {
  std::printf(
      "usage: epprof run [MODEL.onnx] [options]\n"
      "\n"
      "Runs an ONNX model in the reference runtime with libepprof profiling the\n"
      "session, writes a Chrome trace and prints a per-op table (op, count, total\n"
      "ms, mean us, %% of model_run) over the measured runs. With no MODEL it\n"
      "profiles the bundled CNN (cnn.onnx; also bundled: mlp.onnx, transformer.onnx).\n"
      "\n"
      "options:\n"
      "  --ep LIST            execution providers in priority order, comma-separated\n"
      "                       (default 'cpu'); each node goes to the first that claims it.\n"
      "                       An entry is 'cpu', a plugin name ('opencl', 'cuda': the\n"
      "                       library libepprof_<name>.so next to epprof's lib directory),\n"
      "                       or a path to an EP plugin library. Nodes no EP claims are an\n"
      "                       error; list 'cpu' last to let it run the rest. A plugin EP's\n"
      "                       device profiler traces its device work into the trace. A\n"
      "                       plugin refused at load (no device) is skipped with a warning\n"
      "                       when EPs follow it, and an error when it is the last one.\n"
      "  --executor KIND      sequential (default) or parallel\n"
      "  --threads N          intra-op threads, 1..256: the threads one node may use\n"
      "                       (Conv, MatMul, Gemm and the like split their work). Default:\n"
      "                       ONNX Runtime's, one per physical core (%d here). With the\n"
      "                       sequential executor, --threads 1 runs everything on one thread\n"
      "  --inter-op-threads N parallel executor threads (nodes run at once), 1..256;\n"
      "                       only with --executor parallel (default: %u, the logical CPUs).\n"
      "                       Its nodes share the --threads intra-op threads\n"
      "  --no-constant-folding\n"
      "                       run every node on every run. By default, as in ONNX\n"
      "                       Runtime, nodes computed from initializers alone run once\n"
      "                       when the session is created and are not in the trace\n"
      "  --no-fusion          run the graph as written. By default, as in ONNX Runtime,\n"
      "                       a BatchNormalization after a Conv is folded into its\n"
      "                       weights, and a Conv with the Add and the activation after\n"
      "                       it (Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid) runs\n"
      "                       as one FusedConv node (where the CPU EP runs them all);\n"
      "                       the nodes it absorbed are not in the trace, and\n"
      "                       float Constant nodes become initializers\n"
      "  --runs N             measured runs, 1..1000000 (default 10)\n"
      "  --warmup N           runs before the measured ones, 0..1000000 (default 1);\n"
      "                       they are in the trace but not in the table\n"
      "%s"
      "  --output PATH        trace file (default: epprof_<model>.json in the current\n"
      "                       directory, .db with --format sqlite); a path ending in\n"
      "                       .db, .sqlite or .sqlite3 gets a SQLite trace database\n"
      "  --format FMT         json (Chrome trace JSON, ONNX Runtime's profile format) or\n"
      "                       sqlite (a database, times in ns; schema in README.md);\n"
      "                       default: by the --output extension, else json\n"
      "  --run-profiling      also profile each run on its own: PATH without its\n"
      "                       extension + .run<N> + the extension\n"
      "  --plugin PATH        add an EP profiler plugin (e.g. build/lib/libepprof_example.so)\n"
      "  --timestamps FORMAT  integer (default): ts/dur in whole microseconds, as ONNX\n"
      "                       Runtime writes them (both ends to the nearest us; a slice\n"
      "                       under 1 us is written 1 us long with its exact length in\n"
      "                       a dur_ns arg); fractional: us with ns digits. JSON\n"
      "                       only: a database always holds ns\n"
      "  --memory             also profile memory: every tensor the runtime allocates\n"
      "                       and frees, as ONNX Runtime's mem_* args on node events,\n"
      "                       a 'mem_in_use cpu' counter track, and per-device peak,\n"
      "                       end and leak figures in the metadata (epprof report\n"
      "                       --by memory summarises them)\n"
      "  --no-profile         run without profiling (for overhead comparisons); no trace\n"
      "  --save-outputs DIR   write each graph output of the last run to DIR/<name>.pb\n"
      "                       ('/' in a name becomes '_'); not when the runs stop early\n"
      "  --no-table           do not print the per-op table\n%s"
      "  --serve              run as a server until SIGINT/SIGTERM/SIGHUP: the model runs\n"
      "                       back to back (after --warmup), unprofiled, with a capture\n"
      "                       listener open; `epprof capture PID` profiles the next runs\n"
      "                       into a trace. Not with --runs, --output, --run-profiling,\n"
      "                       --counters, --save-outputs or --no-profile. Exit status 0\n"
      "                       when stopped by a signal\n"
      "  --socket-dir DIR     --serve: the listener's directory (default\n"
      "                       $XDG_RUNTIME_DIR/epprof, else /tmp/epprof-<uid>; mode 0700)\n"
      "  --pause MS           --serve: sleep MS ms between runs, 0..60000 (default 0)\n"
      "  -h, --help           show this help\n"
      "\n"
      "Output files: a regular file at an output path is replaced once complete; a\n"
      "symlink is followed; a directory, device, FIFO or socket, or a file the\n"
      "command reads (the model, --input, --plugin), is refused.\n"
      "\n"
      "SIGINT, SIGTERM or SIGHUP: the current run finishes, the trace of the runs\n"
      "that completed is written (metadata \"interrupted\", \"runs_completed\") and\n"
      "the exit status is 128 + the signal; a second signal stops at once. A run\n"
      "that fails also ends the runs: the trace holds those before it (metadata\n"
      "\"failed\"), the failed run has no per-run trace, and the exit status is 1.\n"
      "\n"
      "Float MatMul, Gemm, Conv and the like run on the runtime's own gemm where the\n"
      "CPU has AVX-512 or AVX2 with FMA (metadata \"sgemm_kernel\"; here: %s), the\n"
      "rest on OpenBLAS. Float convs whose output maps fill its vectors (by rows, or\n"
      "with stride 1 narrow rows end to end) run as an implicit GEMM on the same\n"
      "CPUs (metadata \"conv_direct_kernel\"; here: %s).\n"
      "Environment: OPENBLAS_CORETYPE, when set, picks OpenBLAS's\n"
      "kernels; unset, OpenBLAS picks by the CPU. The trace's metadata\n"
      "\"blas_kernels\" names the set the runs used (here: %s).\n"
      "\n"
      "Exit status: 0 on success, 1 if loading, running or writing fails (the\n"
      "message names the problem), 2 for a bad command line.\n",
      rt::default_intra_op_threads(), std::max(1u, std::thread::hardware_concurrency()), input_options_help(),
      counter_options_help(),
      rt::sgemm_kernels().c_str(), rt::conv_direct_kernels().c_str(), rt::blas_kernels().c_str());
}

std::string basename_no_ext(const std::string& path) {
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  size_t dot = base.rfind('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// Returns kExitOk, or the exit code of a usage error already reported.
int parse(int argc, char** argv, Options& o) {
  auto need = [&](int& i) -> const char* {
    if (i + 1 >= argc) return nullptr;
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    int64_t n = 0;
    const char* v = nullptr;
    if (const int c = parse_counter_option(argc, argv, i, o.counters)) {
      if (c < 0) return kExitUsage;
      continue;
    }
    if (const int c = parse_input_option(argc, argv, i, o.inputs)) {
      if (c < 0) return kExitUsage;
      continue;
    }
    if (a == "-h" || a == "--help") {
      print_help();
      std::exit(kExitOk);
    } else if (a == "--ep") {
      if (!(v = need(i))) return usage_error(kCommand, "--ep needs a list, e.g. --ep cpu");
      o.eps = split_list(v);
      for (const auto& ep : o.eps)
        if (ep.empty()) return usage_error(kCommand, "--ep: empty name in '" + std::string(v) + "'");
    } else if (a == "--no-constant-folding") {
      o.fold_constants = false;
    } else if (a == "--no-fusion") {
      o.fuse_nodes = false;
    } else if (a == "--executor") {
      if (!(v = need(i))) return usage_error(kCommand, "--executor needs sequential or parallel");
      if (std::strcmp(v, "sequential") == 0) o.executor = rt::ExecutorKind::Sequential;
      else if (std::strcmp(v, "parallel") == 0) o.executor = rt::ExecutorKind::Parallel;
      else return usage_error(kCommand, std::string("--executor: unknown executor '") + v + "' (sequential or parallel)");
    } else if (a == "--threads" || a == "--inter-op-threads" || a == "--runs" || a == "--warmup") {
      const bool threads = a == "--threads" || a == "--inter-op-threads";
      const int64_t lo = threads || a == "--runs" ? 1 : 0;
      const int64_t hi = threads ? 256 : 1000000;
      if (!(v = need(i)) || !parse_int(v, lo, hi, &n))
        return usage_error(kCommand, a + " needs an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
      if (a == "--threads") o.threads = int(n);
      if (a == "--inter-op-threads") o.inter_op_threads = int(n);
      if (a == "--runs") o.runs = int(n), o.runs_given = true;
      if (a == "--warmup") o.warmup = int(n);
    } else if (a == "--output") {
      if (!(v = need(i)) || !*v) return usage_error(kCommand, "--output needs a path");
      o.output = v;
    } else if (a == "--save-outputs") {
      if (!(v = need(i)) || !*v) return usage_error(kCommand, "--save-outputs needs a directory");
      o.save_outputs = v;
    } else if (a == "--plugin") {
      if (!(v = need(i)) || !*v) return usage_error(kCommand, "--plugin needs a path");
      o.plugins.push_back(v);
    } else if (a == "--run-profiling") {
      o.run_profiling = true;
    } else if (a == "--no-profile") {
      o.profile = false;
    } else if (a == "--timestamps") {
      const std::string format = (v = need(i)) ? v : "";
      if (format != "integer" && format != "fractional")
        return usage_error(kCommand, "--timestamps wants integer or fractional" +
                                         (v ? ", not '" + format + "'" : std::string()));
      o.integer_timestamps = format == "integer";
    } else if (a == "--format") {
      const std::string format = (v = need(i)) ? v : "";
      if (format != "json" && format != "sqlite")
        return usage_error(kCommand, "--format wants json or sqlite" + (v ? ", not '" + format + "'" : std::string()));
      o.trace_format = format == "json" ? EPPROF_TRACE_FORMAT_JSON : EPPROF_TRACE_FORMAT_SQLITE;
    } else if (a == "--memory") {
      o.memory = true;
    } else if (a == "--integer-timestamps") {  // from before --timestamps; integer is the default now
      o.integer_timestamps = true;
    } else if (a == "--no-table") {
      o.table = false;
    } else if (a == "--serve") {
      o.serve = true;
    } else if (a == "--socket-dir") {
      if (!(v = need(i)) || !*v) return usage_error(kCommand, "--socket-dir needs a directory");
      o.socket_dir = v;
    } else if (a == "--pause") {
      if (!(v = need(i)) || !parse_int(v, 0, 60000, &n)) return usage_error(kCommand, "--pause needs milliseconds in 0..60000");
      o.pause_ms = int(n);
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      return usage_error(kCommand, "more than one model given ('" + o.model + "' and '" + a + "')");
    }
  }
  if (check_counter_options(o.counters) < 0) return kExitUsage;
  if (o.serve) {
    const std::pair<bool, const char*> excluded[] = {
        {o.runs_given, "--runs"}, {!o.output.empty(), "--output"}, {o.run_profiling, "--run-profiling"},
        {!o.counters.names.empty(), "--counters"}, {!o.save_outputs.empty(), "--save-outputs"},
        {!o.profile, "--no-profile"}};
    for (const auto& [given, name] : excluded)
      if (given)
        return usage_error(kCommand, std::string("--serve and ") + name +
                                         " exclude each other (each capture names its runs and its trace)");
  } else if (!o.socket_dir.empty() || o.pause_ms) {
    return usage_error(kCommand, "--socket-dir and --pause apply to --serve only");
  }
  if (o.run_profiling && !o.profile) return usage_error(kCommand, "--run-profiling and --no-profile exclude each other");
  if (o.inter_op_threads && o.executor != rt::ExecutorKind::Parallel)
    return usage_error(kCommand,
                       "--inter-op-threads sizes the parallel executor's pool: add --executor parallel "
                       "(--threads sets the intra-op threads)");
  return kExitOk;
}

std::string default_model() {
  if (const char* env = std::getenv("EPPROF_MODELS_DIR")) return std::string(env) + "/cnn.onnx";
  const std::string bin = executable_dir();
  for (const char* rel : {"/../models/cnn.onnx", "/../share/epprof/models/cnn.onnx"}) {
    std::string p = bin + rel;
    if (access(p.c_str(), R_OK) == 0) return p;
  }
  return bin + "/../models/cnn.onnx";
}

// Where `--ep NAME` looks for libepprof_NAME.so: the build tree's lib/ and,
// once installed, the library directory beside bin/.
std::vector<std::string> plugin_dirs() {
  const std::string bin = executable_dir();
  return {bin + "/../lib", bin + "/../" EPPROF_CLI_INSTALL_LIBDIR};
}

// An EP by name: "cpu", a plugin name, or a plugin library path.
std::shared_ptr<rt::ExecutionProvider> make_ep(const std::string& name) {
  if (name == "cpu") return rt::make_cpu_execution_provider();
  if (name.find('/') != std::string::npos || name.find(".so") != std::string::npos) {
    if (access(name.c_str(), R_OK) != 0)
      throw rt::Error(rt::ErrorKind::BadInput, "--ep: cannot read EP plugin '" + name + "': " + std::strerror(errno));
    return rt::load_plugin_ep(name);
  }
  std::string tried;
  for (const std::string& dir : plugin_dirs()) {
    const std::string path = dir + "/libepprof_" + name + ".so";
    if (access(path.c_str(), R_OK) == 0) return rt::load_plugin_ep(path);
    tried += (tried.empty() ? "" : ", ") + path;
  }
  throw rt::Error(rt::ErrorKind::BadInput, "unknown execution provider '" + name +
                                               "': not 'cpu', and no plugin library found (looked for " + tried + ")");
}

// The device profilers of the plugin EPs, registered with libepprof so that
// every profiling scope gets an instance.
std::vector<epprof_plugin_t> register_ep_profilers(const rt::SessionOptions& so) {
  std::vector<epprof_plugin_t> out;
  for (const auto& ep : so.providers) {
    auto* plugin_ep = dynamic_cast<const rt::PluginExecutionProvider*>(ep.get());
    if (!plugin_ep || !plugin_ep->has_profiler()) continue;
    epprof_plugin_t handle;
    if (epprof_status* st = epprof_plugin_register(plugin_ep->make_profiler_plugin(), &handle)) {
      std::string msg = epprof_status_get_message(st);
      epprof_status_release(st);
      throw rt::Error(rt::ErrorKind::Io, "EP '" + ep->name() + "': cannot register its profiler: " + msg);
    }
    out.push_back(handle);
  }
  return out;
}

// Progress on stderr, only on a terminal and only once runs take a while.
class Progress {
 public:
  explicit Progress(int total) : total_(total), tty_(isatty(2)), start_(std::chrono::steady_clock::now()) {}
  void update(int done) {
    if (!tty_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    shown_ = true;
    const int width = 30, filled = int(int64_t(width) * done / total_);
    std::fprintf(stderr, "\r[%s%s] %d/%d runs", std::string(size_t(filled), '=').c_str(),
                 std::string(size_t(width - filled), ' ').c_str(), done, total_);
    std::fflush(stderr);
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  int total_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

// What the session's fusion did, for the summary and the trace's metadata.
std::string fusions_text(const rt::Session::Fusions& f) {
  std::string out;
  if (f.batch_norms) out = std::to_string(f.batch_norms) + " BatchNormalization folded into Conv";
  if (f.fused_convs)
    out += (out.empty() ? "" : ", ") + std::to_string(f.fused_convs) + " Conv made FusedConv, absorbing " +
           std::to_string(f.absorbed) + " Add and activation nodes";
  return out.empty() ? "none" : out;
}

// PATH without its extension (.json, or a database's) + ".run<N>" + the
// extension (".json" if it had none); later APPLICATION passes add ".pass<P>".
std::string run_trace_path(const std::string& output, int pass, int run) {
  std::string stem = output, ext = ".json";
  for (const char* e : {".json", ".db", ".sqlite3", ".sqlite"}) {
    const size_t n = std::strlen(e);
    if (stem.size() > n && stem.compare(stem.size() - n, n, e) == 0) {
      ext = e;
      stem.resize(stem.size() - n);
      break;
    }
  }
  if (pass > 0) stem += ".pass" + std::to_string(pass + 1);
  return stem + ".run" + std::to_string(run) + ext;
}

std::vector<epprof_plugin_t> load_plugins(const Options& o) {
  std::vector<epprof_plugin_t> out;
  for (const auto& path : o.plugins) {
    epprof_plugin_t p;
    if (epprof_status* st = epprof_plugin_load(path.c_str(), &p)) {
      std::string msg = epprof_status_get_message(st);
      epprof_status_release(st);
      throw rt::Error(rt::ErrorKind::Io, msg);
    }
    out.push_back(p);
  }
  return out;
}

// The EPs of --ep, in order. A plugin EP that exists but cannot be used
// here (refused at load: no device, no driver; rt::load_plugin_ep's Io
// errors) is skipped with a warning when EPs follow it: its nodes go to
// them and the results are the same. As the last EP it is an error, and so
// is an unknown name or a missing file (BadInput) anywhere in the list.
std::vector<std::shared_ptr<rt::ExecutionProvider>> make_eps(const std::vector<std::string>& names) {
  std::vector<std::shared_ptr<rt::ExecutionProvider>> eps;
  for (size_t i = 0; i < names.size(); ++i) {
    try {
      eps.push_back(make_ep(names[i]));
    } catch (const rt::Error& e) {
      if (e.kind() != rt::ErrorKind::Io || i + 1 == names.size()) throw;
      std::fprintf(stderr,
                   "epprof run: warning: %s\nepprof run: warning: EP '%s' not used; its nodes run on the next EP "
                   "in --ep (%s)\n",
                   e.what(), names[i].c_str(), names[i + 1].c_str());
    }
  }
  return eps;
}

// Every file the command reads: no output may be one of them.
std::vector<std::string> input_paths(const Options& o, const std::string& model) {
  std::vector<std::string> in = {model};
  for (const auto& [name, path] : o.inputs.files) in.push_back(path);
  for (const auto& path : o.plugins) in.push_back(path);
  for (const auto& ep : o.eps)
    if (ep.find('/') != std::string::npos || ep.find(".so") != std::string::npos) in.push_back(ep);
  return in;
}

// A graph output's name as a file name in --save-outputs DIR: '/' and NUL
// become '_' and "." or ".." get a leading '_', so that no name reaches
// outside DIR.
std::string output_file_name(const std::string& name) {
  std::string f = name.empty() ? "_" : name;
  for (char& c : f)
    if (c == '/' || c == '\0') c = '_';
  if (f == "." || f == "..") f = "_" + f;
  return f + ".pb";
}

void save_outputs(const std::string& dir, const std::vector<std::string>& inputs, const rt::Session& session,
                  const std::vector<rt::Tensor>& outputs) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw rt::Error(rt::ErrorKind::Io, "cannot create '" + dir + "': " + std::strerror(errno));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    std::string error;
    auto file = io::AtomicFile::create(dir + "/" + output_file_name(name), &error, inputs);
    if (!file || !file->write(rt::serialize_tensor_proto(outputs[i], name), &error) || !file->commit(&error))
      throw rt::Error(rt::ErrorKind::Io, "--save-outputs: " + error);
  }
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal";
  }
}

int execute(const Options& o) {
  const std::string model = o.model.empty() ? default_model() : o.model;
  const std::string output =
      o.output.empty()
          ? "epprof_" + basename_no_ext(model) + (o.trace_format == EPPROF_TRACE_FORMAT_SQLITE ? ".db" : ".json")
          : o.output;
  const std::vector<std::string> inputs = input_paths(o, model);
  // Up front: libepprof applies the other output rules when it creates the
  // trace, but only the command knows its inputs.
  std::string path_error;
  if (o.profile && !o.serve && !io::check_output_path(output, inputs, nullptr, &path_error))
    throw rt::Error(rt::ErrorKind::Io, path_error);
  rt::SessionOptions so;
  so.providers = make_eps(o.eps);
  so.executor = o.executor;
  so.intra_op_threads = o.threads;
  so.inter_op_threads = o.inter_op_threads;
  so.fold_constants = o.fold_constants;
  so.fuse_nodes = o.fuse_nodes;
  std::vector<epprof_plugin_t> plugins = load_plugins(o);
  if (o.profile) {
    for (epprof_plugin_t p : register_ep_profilers(so)) plugins.push_back(p);
  }

  // The session's observer: its trace, and the counters' session to feed.
  std::unique_ptr<RunCounters> counters;
  if (!o.counters.names.empty()) counters = std::make_unique<RunCounters>(o.counters);
  const bool traced = o.profile && !o.serve;  // the session-level trace
  std::unique_ptr<rt::ProfilingObserver> session_profiler;
  if (traced || counters) {
    rt::ProfilingOptions po;
    if (traced) po.trace_path = output;
    po.sessions = counters != nullptr;
    po.scope_name = "session";
    po.plugins = plugins;
    po.integer_timestamps = o.integer_timestamps;
    po.trace_format = o.trace_format;
    po.memory = o.memory;
    po.metadata = {{"model", model}, {"runs", std::to_string(o.runs)}, {"warmup", std::to_string(o.warmup)}};
    session_profiler = std::make_unique<rt::ProfilingObserver>(po);
    so.observer = session_profiler.get();
  }
  rt::Session session(model, so);
  std::string guessed;  // generated inputs whose dynamic dims were set to 1
  const auto inputs_data = make_inputs(session, o.inputs, &guessed);
  if (o.serve) {
    ServeOptions serve{model, plugins, o.integer_timestamps, inputs, o.socket_dir, o.warmup, o.pause_ms};
    return serve_captures(session, inputs_data, serve);
  }
  if (traced) {
    // The thread settings the runs use, resolved (defaults included).
    const std::pair<const char*, std::string> settings[] = {
        {"executor", o.executor == rt::ExecutorKind::Parallel ? "parallel" : "sequential"},
        {"intra_op_threads", std::to_string(session.intra_op_threads())},
        {"inter_op_threads", std::to_string(session.inter_op_threads())},
        {"blas_kernels", rt::blas_kernels()},
        {"fusions", fusions_text(session.fusions())},
        {"sgemm_kernel", rt::sgemm_kernels()},
        {"conv_direct_kernel", rt::conv_direct_kernels()}};
    for (const auto& [key, value] : settings)
      if (epprof_status* st = epprof_profiler_set_metadata(session_profiler->profiler(), key, value.c_str()))
        epprof_status_release(st);
  }

  // APPLICATION replay (--counters) runs the whole workload (warm-up and
  // measured runs) once per pass; the per-op time table covers the first.
  // A first SIGINT/SIGTERM/SIGHUP, or a run that fails, ends the loop after
  // the runs that completed; their trace is still written, marked in its
  // metadata.
  install_signal_handlers(SignalMode::kFinishCurrentWork);
  const int per_pass = o.warmup + o.runs, passes = counters ? counters->workload_passes() : 1;
  std::vector<rt::Tensor> outputs;
  std::vector<std::string> run_traces;
  std::string run_error;
  int completed = 0;
  bool pass_open = false;
  Progress progress(passes * per_pass);
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < passes * per_pass && !pending_signal(); ++k) {
    const int pass = k / per_pass, r = k % per_pass;
    if (counters && r == 0) counters->begin_pass(pass), pass_open = true;
    rt::RunOptions ro;
    std::unique_ptr<rt::ProfilingObserver> run_profiler;
    if (o.run_profiling) {
      rt::ProfilingOptions po;
      po.trace_path = run_trace_path(output, pass, r + 1);
      if (!io::check_output_path(po.trace_path, inputs, nullptr, &path_error))
        throw rt::Error(rt::ErrorKind::Io, path_error);
      po.scope_name = (pass ? "pass " + std::to_string(pass + 1) + " " : std::string()) + "run " + std::to_string(r + 1);
      po.plugins = plugins;
      po.integer_timestamps = o.integer_timestamps;
      po.trace_format = o.trace_format;
      po.memory = o.memory;
      run_profiler = std::make_unique<rt::ProfilingObserver>(po);
      ro.observer = run_profiler.get();
    }
    try {
      outputs = session.run(inputs_data, ro);
    } catch (const rt::Error& e) {
      // The failed run's own trace is not written (its observer goes
      // without finish()); the session's holds the runs before it.
      run_error = "run " + std::to_string(k + 1) + " failed: " + e.what();
      if (!guessed.empty())
        run_error += " (random inputs with dynamic dims set to 1: " + guessed +
                     "; give real ones with --input NAME=FILE, or their shapes with --shape NAME=DIMS)";
      break;
    }
    if (run_profiler) {
      run_profiler->finish();
      run_traces.push_back(run_profiler->trace_path());
    }
    ++completed;
    progress.update(k + 1);
    if (counters && r + 1 == per_pass) counters->end_pass(), pass_open = false;
  }
  const int sig = pending_signal();
  const bool stopped = sig != 0 || !run_error.empty();
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!o.save_outputs.empty() && !stopped) save_outputs(o.save_outputs, inputs, session, outputs);

  std::string eps;
  for (const auto& ep : o.eps) eps += (eps.empty() ? "" : ",") + ep;
  std::string threads = "intra-op threads " + std::to_string(session.intra_op_threads());
  if (session.inter_op_threads()) threads += ", inter-op threads " + std::to_string(session.inter_op_threads());
  std::printf("model: %s (%zu nodes, %s, %s, ep %s)\n", model.c_str(), session.nodes().size(),
              session.executor_name(), threads.c_str(), eps.c_str());
  if (const rt::Session::Fusions f = session.fusions(); f.batch_norms || f.fused_convs)
    std::printf("fused: %s (--no-fusion runs the graph as written)\n", fusions_text(f).c_str());
  if (completed > 0)
    std::printf("runs: %d measured + %d warm-up%s, %.3f ms per run (wall, all runs)\n", o.runs, o.warmup,
                passes > 1 ? (", x " + std::to_string(passes) + " passes").c_str() : "", wall_ms / double(completed));
  if (stopped)
    std::printf("stopped after %d of %d runs: %s\n", completed, passes * per_pass,
                sig ? (std::string("interrupted by ") + signal_name(sig)).c_str() : run_error.c_str());
  if (counters) {
    if (pass_open) counters->end_pass();
    counters->finish();
    if (!stopped) counters->print(stdout, o.warmup, per_pass);
  }
  if (traced) {
    if (stopped) {
      const std::pair<const char*, std::string> marks[] = {
          {sig ? "interrupted" : "failed", sig ? signal_name(sig) : run_error},
          {"runs_completed", std::to_string(completed)}};
      for (const auto& [key, value] : marks)
        if (epprof_status* st = epprof_profiler_set_metadata(session_profiler->profiler(), key, value.c_str()))
          epprof_status_release(st);
    }
    const epprof_trace_stats stats = session_profiler->finish();
    const int measured = std::min(o.runs, std::max(completed - o.warmup, 0));
    if (o.table && measured > 0) {
      std::string error;
      if (!print_op_table(output, o.warmup, measured, stdout, &error)) {
        std::fprintf(stderr, "epprof run: %s\n", error.c_str());
        return kExitError;
      }
    }
    std::printf("trace: %s (%llu host events, %llu device events, %llu dropped)\n", output.c_str(),
                static_cast<unsigned long long>(stats.host_events),
                static_cast<unsigned long long>(stats.device_events),
                static_cast<unsigned long long>(stats.dropped_events));
    if (!run_traces.empty())
      std::printf("run traces: %s ... %s\n", run_traces.front().c_str(), run_traces.back().c_str());
  }
  if (!run_error.empty()) {
    std::fprintf(stderr, "epprof run: %s\n", run_error.c_str());
    return kExitError;
  }
  return sig ? signal_exit_code(sig) : kExitOk;
}

}  // namespace

int run_run(int argc, char** argv) {
  Options o;
  if (int rc = parse(argc, argv, o); rc != kExitOk) return rc;
  try {
    return execute(o);
  } catch (const rt::Error& e) {
    std::fprintf(stderr, "epprof run: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "epprof run: %s\n", e.what());
  }
  return kExitError;
}

}  // namespace epprof::cli
