// epprof_report_gen: writes a large synthetic epprof trace for benchmarking
// `epprof report` (bench/README.md). The events have the shape of the ones
// `epprof run` writes with a device plugin: model_run, Node events with the
// ONNX Runtime args, device kernels with attribution, flows, metadata.
//
//   epprof_report_gen OUT.json [SIZE_MB]   (default 1100 MB)
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char* const kOps[] = {"Conv", "BatchNormalization", "Relu", "MaxPool", "Add", "Gemm", "MatMul", "Softmax"};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: %s OUT.json [SIZE_MB]\n", argv[0]);
    return argc < 2 ? 2 : 0;
  }
  const uint64_t target = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1100) << 20;
  FILE* f = std::fopen(argv[1], "w");
  if (!f) {
    std::perror(argv[1]);
    return 1;
  }
  static char buf[1 << 20];
  std::setvbuf(f, buf, _IOFBF, sizeof buf);
  constexpr int pid = 4242, tid = 4242, dev_tid = 1073741824, nodes_per_run = 200;
  uint64_t written = std::fprintf(f, "[\n");
  uint64_t corr = 1, flow = 1, runs = 0;
  double ts = 1000.0;
  uint32_t rng = 12345;
  auto rnd = [&]() { return rng = rng * 1664525u + 1013904223u, double(rng >> 8) / double(1 << 24); };
  bool first = true;
  auto sep = [&]() -> const char* { const char* s = first ? "" : ",\n"; first = false; return s; };
  while (written < target) {
    // The run first (events are in time order per track), so its length
    // is drawn before its nodes.
    const double run_ts = ts;
    const uint64_t run_corr = corr++;
    double durs[nodes_per_run], run_len = 5.0;
    for (double& d : durs) d = 5.0 + 100.0 * rnd(), run_len += d + 1.0;
    written += std::fprintf(f,
        "%s{\"cat\":\"Session\",\"name\":\"model_run\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"ph\":\"X\","
        "\"args\":{\"correlation_id\":\"%" PRIu64 "\"}}",
        sep(), pid, tid, run_ts, run_len + 2.0, run_corr);
    std::string dev;
    double t = run_ts + 5.0;
    for (int n = 0; n < nodes_per_run; ++n) {
      const char* op = kOps[n % 8];
      const double dur = durs[n];
      const uint64_t c = corr++;
      written += std::fprintf(f,
          "%s{\"cat\":\"Node\",\"name\":\"layer%d.%s_kernel_time\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
          "\"ph\":\"X\",\"args\":{\"op_name\":\"%s\",\"provider\":\"CPUExecutionProvider\",\"node_index\":\"%d\","
          "\"activation_size\":\"131072\",\"parameter_size\":\"36864\",\"output_size\":\"131072\","
          "\"input_type_shape\":[{\"float\":[1,32,32,32]},{\"float\":[32,32,3,3]}],"
          "\"output_type_shape\":[{\"float\":[1,32,32,32]}],\"correlation_id\":\"%" PRIu64 "\"}}",
          sep(), n, op, pid, tid, t, dur, op, n, c);
      char d[1024];
      const double dts = t + 0.3 * dur, ddur = 0.5 * dur;
      std::snprintf(d, sizeof d,
          ",\n{\"cat\":\"Kernel\",\"name\":\"%s_device_kernel\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
          "\"ph\":\"X\",\"args\":{\"queue\":\"0\",\"correlation_id\":\"%" PRIu64 "\",\"op_name\":\"%s\","
          "\"node_index\":\"%d\",\"parent_name\":\"layer%d.%s_kernel_time\"}}"
          ",\n{\"cat\":\"Flow\",\"name\":\"node_to_device\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"ph\":\"s\",\"id\":%" PRIu64 ",\"args\":{}}"
          ",\n{\"cat\":\"Flow\",\"name\":\"node_to_device\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRIu64 ",\"args\":{}}",
          op, pid, dev_tid, dts, ddur, c, op, n, n, op, pid, tid, t, flow, pid, dev_tid, dts, flow);
      ++flow;
      dev += d;
      t += dur + 1.0;
    }
    std::fwrite(dev.data(), 1, dev.size(), f);
    written += dev.size();
    ts = t + 10.0;
    ++runs;
  }
  written += std::fprintf(f,
      ",\n{\"cat\":\"__metadata\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"ts\":0,\"ph\":\"M\",\"args\":{\"name\":\"epprof host (bench)\"}}"
      ",\n{\"cat\":\"Metadata\",\"name\":\"epprof_metadata\",\"pid\":%d,\"tid\":0,\"ts\":0,\"ph\":\"M\",\"args\":{"
      "\"epprof_version\":\"0.1.0\",\"t0_epoch_ns\":\"1700000000000000000\",\"runs\":\"%" PRIu64 "\",\"warmup\":\"0\"}}\n]\n",
      pid, pid, runs);
  if (std::fclose(f) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  std::printf("%s: %" PRIu64 " bytes, %" PRIu64 " runs of %d nodes\n", argv[1], written, runs, nodes_per_run);
  return 0;
}
