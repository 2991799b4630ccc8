// Minimal use of the runtime API: load a model, feed random inputs (fixed seed),
// time N runs, optionally save the outputs as TensorProto files.
// usage: epprof_rt_time MODEL [RUNS] [sequential|parallel] [THREADS] [SAVE_DIR]
// THREADS: intra-op threads (SessionOptions::intra_op_threads; 0 = the default)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "epprof/rt/session.h"
#include "epprof/rt/tensor_io.h"

using namespace epprof::rt;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [RUNS] [sequential|parallel] [THREADS] [SAVE_DIR]\n", argv[0]);
    return 2;
  }
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  SessionOptions options;
  if (argc > 3 && std::string(argv[3]) == "parallel") options.executor = ExecutorKind::Parallel;
  if (argc > 4) options.intra_op_threads = std::atoi(argv[4]);
  try {
    Session session(argv[1], options);
    std::mt19937 rng(7);
    std::normal_distribution<float> dist;
    std::map<std::string, Tensor> inputs;
    for (const auto& in : session.inputs()) {
      Shape shape = in.shape;
      for (auto& d : shape) d = d < 0 ? 1 : d;
      Tensor t(in.type, shape);
      if (in.type == DataType::Float)
        for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = dist(rng);
      inputs[in.name] = t;
    }
    session.run(inputs);  // warm-up
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto outputs = session.run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (r == 0 && argc > 5)
        for (size_t o = 0; o < outputs.size(); ++o)
          write_tensor_file(std::string(argv[5]) + "/" + session.outputs()[o].name + ".pb", outputs[o],
                            session.outputs()[o].name);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%s: %zu nodes, %s, %d runs: median %.3f ms, min %.3f ms\n", argv[1], session.nodes().size(),
                session.executor_name(), runs, ms[ms.size() / 2], ms.front());
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
