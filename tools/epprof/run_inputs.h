// `epprof run`'s inputs: tensor files (--input), shapes for random ones
// (--shape) and their seed (--seed), and the tensors a run is fed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "epprof/rt/session.h"
#include "epprof/rt/tensor.h"

namespace epprof::cli {

struct InputOptions {
  std::vector<std::pair<std::string, std::string>> files;  // --input: name ("": the tensor's own), .pb path
  std::vector<std::pair<std::string, rt::Shape>> shapes;    // --shape: a random input's shape
  uint64_t seed = 42;                                       // --seed
};

// Consumes argv[i] (and its value) when it is --input, --shape or --seed:
// returns 1 when consumed, 0 when not ours, or -1 after printing a usage
// error (the caller exits with kExitUsage).
int parse_input_option(int argc, char** argv, int& i, InputOptions& o);
// Help lines for the three options.
const char* input_options_help();

// The run's inputs: each --input file under its name, then a random tensor
// for every other required input, of its --shape or its declared shape
// with each dynamic dim 1 (float uniform in [-1, 1), int64 0). Each of
// those with dynamic dims is named in *guessed with the shape it got, for
// a failed run's message. Throws rt::Error (BadInput or Io) naming the
// option and the input at fault: an unreadable file, a name the model
// lacks, an input given twice, a shape off the declared rank or fixed
// dims, a type that cannot be generated.
std::map<std::string, rt::Tensor> make_inputs(const rt::Session& session, const InputOptions& o,
                                              std::string* guessed);

}  // namespace epprof::cli
