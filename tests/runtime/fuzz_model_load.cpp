// libFuzzer target: model loading (with libonnx's shape inference, which
// crashes on attributes the loader has not checked first) and session
// initialisation (EP assignment, kernel creation, the execution plan) must
// never crash, leak or hit undefined behaviour; bad input is an
// epprof::rt::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "epprof/rt/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  epprof::rt::SessionOptions options;
  try {
    epprof::rt::Session session =
        epprof::rt::Session::from_bytes(std::string(reinterpret_cast<const char*>(data), size), options, "<fuzz>");
    (void)session.nodes().size();
  } catch (const epprof::rt::Error&) {
  }
  return 0;
}
