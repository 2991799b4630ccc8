// Inputs for a runtime session's required inputs: float32 tensors of their
// declared shapes, normally distributed from a fixed seed.
#pragma once

#include <map>
#include <random>
#include <string>

#include "epprof/rt/session.h"

namespace epprof::rt::testing {

inline std::map<std::string, Tensor> random_inputs(const Session& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::map<std::string, Tensor> in;
  for (const auto& info : s.inputs()) {
    Tensor t(DataType::Float, info.shape);
    float* p = t.mutable_data<float>();
    for (int64_t i = 0; i < t.size(); ++i) p[i] = dist(rng);
    in[info.name] = t;
  }
  return in;
}

}  // namespace epprof::rt::testing
