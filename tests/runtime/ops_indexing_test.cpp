// Hand-checked results and error messages of the indexing kernels, through
// small graphs (ONNX's own test data is covered by runtime_conformance).
#include <gtest/gtest.h>

#include "epprof/rt/session.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;
