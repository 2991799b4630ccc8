// `epprof demo`: a demo host. It loads the example plugin, profiles a
// multi-threaded workload of fake graph nodes that do real floating-point
// work, and writes a Chrome trace (open it in Perfetto or chrome://tracing).
// It is also a compact example of embedding libepprof through the C API.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "epprof/epprof.h"
#include "io/atomic_file.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "demo";
constexpr int64_t kDefaultThreads = 4;
constexpr int64_t kDefaultEvents = 1000;
constexpr const char* kDefaultOutput = "epprof_demo.json";
constexpr const char* kPluginFile = "libepprof_example.so";
constexpr int64_t kNodeWorkNs = 20000;  // ~20 µs of floating-point work per node

// The fake model every worker runs: one "model_run" executes these nodes in
// order (repeated until the worker has run --events nodes).
struct FakeNode {
  const char* name;
  const char* op_type;
};
constexpr FakeNode kModel[] = {
    {"conv_0", "Conv"},     {"relu_1", "Relu"},   {"conv_2", "Conv"},
    {"add_3", "Add"},       {"matmul_4", "MatMul"}, {"gemm_5", "Gemm"},
    {"softmax_6", "Softmax"}, {"reshape_7", "Reshape"},
};
constexpr size_t kModelSize = sizeof kModel / sizeof kModel[0];

void print_help() {
  std::printf(
      "usage: epprof demo [--threads N] [--events N] [--plugin PATH] [--output PATH]\n"
      "\n"
      "Profiles a multi-threaded demo workload with an EP profiler plugin and\n"
      "writes a Chrome trace. Each thread runs fake model runs (SESSION events\n"
      "\"model_run\") of %zu nodes (NODE events \"<node>_kernel_time\" with args\n"
      "op_name, provider, node_index), each doing ~20 us of floating-point work.\n"
      "\n"
      "options:\n"
      "  --threads N    worker threads, 1..256 (default %lld)\n"
      "  --events N     node events per thread, 1..100000000 (default %lld)\n"
      "  --plugin PATH  EP profiler plugin to load (default: the example plugin,\n"
      "                 <bindir>/../lib/%s)\n"
      "  --output PATH  trace file to write (default: %s in the current directory)\n"
      "  -h, --help     show this help\n"
      "\n"
      "Prints the trace path and its statistics. Exit status: 0 on success,\n"
      "1 if profiling fails, 2 for a bad command line.\n",
      kModelSize, static_cast<long long>(kDefaultThreads),
      static_cast<long long>(kDefaultEvents), kPluginFile, kDefaultOutput);
}

struct Options {
  int64_t threads = kDefaultThreads;
  int64_t events = kDefaultEvents;
  std::string plugin;
  std::string output = kDefaultOutput;
};

// Returns -1 when parsing succeeded, else the exit code.
int parse_options(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      print_help();
      return kExitOk;
    }
    std::string value;
    bool has_value = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg != "--threads" && arg != "--events" && arg != "--plugin" && arg != "--output") {
      return usage_error(kCommand, "unknown option '" + arg + "'");
    }
    if (!has_value) {
      if (i + 1 >= argc) return usage_error(kCommand, "option '" + arg + "' needs a value");
      value = argv[++i];
    }
    if (arg == "--threads") {
      if (!parse_int(value.c_str(), 1, 256, &opt->threads))
        return usage_error(kCommand, "--threads wants an integer in 1..256, not '" + value + "'");
    } else if (arg == "--events") {
      if (!parse_int(value.c_str(), 1, 100000000, &opt->events))
        return usage_error(kCommand,
                           "--events wants an integer in 1..100000000, not '" + value + "'");
    } else if (value.empty()) {
      return usage_error(kCommand, "option '" + arg + "' needs a non-empty value");
    } else if (arg == "--plugin") {
      opt->plugin = value;
    } else {
      opt->output = value;
    }
  }
  return -1;
}

// The example plugin next to this executable: <bindir>/../lib in the build
// tree, <bindir>/../<libdir> once installed.
std::string default_plugin_path() {
  std::string dir = executable_dir();
  if (dir.empty()) dir = ".";
  std::vector<std::string> candidates = {dir + "/../lib/" + kPluginFile,
                                         dir + "/../" EPPROF_CLI_INSTALL_LIBDIR "/" + kPluginFile};
  for (const std::string& c : candidates)
    if (access(c.c_str(), R_OK) == 0) return c;
  return candidates.front();  // loading it reports the missing file
}

// Takes ownership of `status`. Prints it and returns false if it is an error.
bool ok(epprof_status* status, const char* what) {
  if (status == nullptr) return true;
  std::fprintf(stderr, "epprof demo: %s: %s: %s\n", what,
               epprof_status_code_name(epprof_status_get_code(status)),
               epprof_status_get_message(status));
  epprof_status_release(status);
  return false;
}

// ~`ns` of real floating-point work (a dependent multiply-add chain).
double fake_kernel(int64_t ns, double seed) {
  const int64_t end = epprof_clock_now_ns() + ns;
  double a = seed, b = 1.0000001;
  do {
    for (int i = 0; i < 256; ++i) {
      a = a * b + 1e-9;
      b = b * 0.9999999 + 1e-7;
    }
  } while (epprof_clock_now_ns() < end);
  return a;
}

// Names interned once, before the workers start.
struct Names {
  epprof_name_id model_run = 0;
  epprof_name_id nodes[kModelSize] = {};
  epprof_name_id op_name = 0;
  epprof_name_id provider = 0;
  epprof_name_id node_index = 0;
  // Each node's args, in a set that also declares the node, so that the
  // plugin's device work is attributed to it (epprof_node_args_intern).
  epprof_arg_set_id node_args[kModelSize] = {};
};

bool intern_names(Names* n) {
  if (!ok(epprof_intern("model_run", &n->model_run), "intern") ||
      !ok(epprof_intern("op_name", &n->op_name), "intern") ||
      !ok(epprof_intern("provider", &n->provider), "intern") ||
      !ok(epprof_intern("node_index", &n->node_index), "intern"))
    return false;
  epprof_name_id provider = 0;
  if (!ok(epprof_intern("ExampleExecutionProvider", &provider), "intern")) return false;
  for (size_t i = 0; i < kModelSize; ++i) {
    std::string name = std::string(kModel[i].name) + "_kernel_time";
    if (!ok(epprof_intern(name.c_str(), &n->nodes[i]), "intern")) return false;
    epprof_node_desc node{};
    node.size = sizeof node;
    node.index = static_cast<uint32_t>(i);
    node.ep = provider;
    if (!ok(epprof_intern(kModel[i].name, &node.name), "intern") ||
        !ok(epprof_intern(kModel[i].op_type, &node.op_type), "intern"))
      return false;
    epprof_arg args[3];
    args[0].key = n->op_name;
    args[0].type = EPPROF_ARG_STRING;
    args[0].value.str = kModel[i].op_type;
    args[1].key = n->provider;
    args[1].type = EPPROF_ARG_STRING;
    args[1].value.str = "ExampleExecutionProvider";
    args[2].key = n->node_index;
    args[2].type = EPPROF_ARG_INT64;
    args[2].value.i64 = static_cast<int64_t>(i);
    if (!ok(epprof_node_args_intern(&node, args, 3, &n->node_args[i]), "node_args_intern")) return false;
  }
  return true;
}

// One worker thread: fake model runs until `events` nodes have run. Returns
// false (after printing the error) on the first failure.
bool run_worker(epprof_profiler_t prof, const Names& names, int index, int64_t events,
                double* checksum) {
  std::string thread_name = "worker " + std::to_string(index);
  if (!ok(epprof_set_thread_name(thread_name.c_str()), "set_thread_name")) return false;
  double acc = index;
  int64_t done = 0;
  while (done < events) {
    const uint64_t run_id = epprof_correlation_id_next();
    if (!ok(epprof_event_begin(prof, EPPROF_CATEGORY_SESSION, names.model_run, run_id),
            "begin model_run"))
      return false;
    for (size_t k = 0; k < kModelSize && done < events; ++k, ++done) {
      const uint64_t id = epprof_correlation_id_next();
      if (!ok(epprof_event_begin(prof, EPPROF_CATEGORY_NODE, names.nodes[k], id), "begin node"))
        return false;
      acc += fake_kernel(kNodeWorkNs, acc);
      epprof_arg set;
      set.key = 0;
      set.type = EPPROF_ARG_SET;
      set.value.set = names.node_args[k];
      if (!ok(epprof_event_end(prof, id, &set, 1), "end node")) return false;
    }
    if (!ok(epprof_event_end(prof, run_id, nullptr, 0), "end model_run")) return false;
  }
  *checksum = acc;
  return true;
}

int demo(const Options& opt) {
  const std::string plugin_path = opt.plugin.empty() ? default_plugin_path() : opt.plugin;
  // libepprof applies the other output rules; only the command knows its input.
  std::string path_error;
  if (!io::check_output_path(opt.output, {plugin_path}, nullptr, &path_error)) {
    std::fprintf(stderr, "epprof demo: %s\n", path_error.c_str());
    return kExitError;
  }
  Names names;
  if (!ok(epprof_set_thread_name("main"), "set_thread_name") || !intern_names(&names))
    return kExitError;

  epprof_plugin_t plugin{};
  if (!ok(epprof_plugin_load(plugin_path.c_str(), &plugin), "loading the plugin"))
    return kExitError;
  const char* plugin_name = "?";
  if (!ok(epprof_plugin_get_name(plugin, &plugin_name), "plugin name")) plugin_name = "?";

  epprof_profiler_config config{};
  config.size = sizeof config;
  config.trace_path = opt.output.c_str();
  config.scope_name = "demo";
  epprof_profiler_t prof{};
  if (!ok(epprof_profiler_create(&config, &prof), "creating the profiler")) {
    ok(epprof_plugin_unload(plugin), "unloading the plugin");
    return kExitError;
  }

  std::printf("epprof demo: %lld threads x %lld nodes, plugin \"%s\" (%s)\n",
              static_cast<long long>(opt.threads), static_cast<long long>(opt.events),
              plugin_name, plugin_path.c_str());
  std::fflush(stdout);

  bool good = ok(epprof_profiler_add_plugin(prof, plugin), "adding the plugin") &&
              ok(epprof_profiler_set_metadata(prof, "workload", "epprof demo"), "metadata") &&
              ok(epprof_profiler_start(prof), "starting the profiler");
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  if (good) {
    std::vector<std::thread> workers;
    std::vector<double> checksums(size_t(opt.threads), 0.0);
    std::atomic<bool> all_ok{true};
    for (int64_t t = 0; t < opt.threads; ++t) {
      workers.emplace_back([&, t] {
        if (!run_worker(prof, names, int(t), opt.events, &checksums[size_t(t)])) all_ok = false;
      });
    }
    for (std::thread& w : workers) w.join();
    // Stop even after a worker failed, so the profiler ends in a clean state.
    good = ok(epprof_profiler_stop(prof, &stats), "stopping the profiler") && all_ok;
  }
  if (!ok(epprof_profiler_destroy(prof), "destroying the profiler")) good = false;
  if (!ok(epprof_plugin_unload(plugin), "unloading the plugin")) good = false;
  if (!good) return kExitError;

  std::printf("trace: %s\n", opt.output.c_str());
  std::printf("host events:         %llu\n", static_cast<unsigned long long>(stats.host_events));
  std::printf("device events:       %llu\n", static_cast<unsigned long long>(stats.device_events));
  std::printf("dropped events:      %llu\n", static_cast<unsigned long long>(stats.dropped_events));
  std::printf("unattributed events: %llu\n",
              static_cast<unsigned long long>(stats.unattributed_device_events));
  if (stats.plugin_errors != 0)
    std::printf("plugin errors:       %llu\n", static_cast<unsigned long long>(stats.plugin_errors));
  return kExitOk;
}

}  // namespace

int run_demo(int argc, char** argv) {
  Options opt;
  int rc = parse_options(argc, argv, &opt);
  if (rc >= 0) return rc;
  return demo(opt);
}

}  // namespace epprof::cli
