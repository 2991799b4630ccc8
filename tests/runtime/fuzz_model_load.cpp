// libFuzzer target: model loading and session initialisation must never crash,
// leak or hit undefined behaviour; bad input is an epprof::rt::Error.
// ONNX shape inference (third-party code) is disabled here.
#include <cstddef>
#include <cstdint>
#include <string>

#include "epprof/rt/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  epprof::rt::SessionOptions options;
  options.shape_inference = false;
  try {
    epprof::rt::Session session =
        epprof::rt::Session::from_bytes(std::string(reinterpret_cast<const char*>(data), size), options, "<fuzz>");
    (void)session.nodes().size();
  } catch (const epprof::rt::Error&) {
  }
  return 0;
}
