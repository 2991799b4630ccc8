#include "epprof/rt/error.h"

namespace epprof::rt {

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::Io: return "I/O error";
    case ErrorKind::InvalidModel: return "invalid model";
    case ErrorKind::UnsupportedOpset: return "unsupported opset";
    case ErrorKind::UnsupportedOp: return "unsupported op";
    case ErrorKind::Cycle: return "cycle in graph";
    case ErrorKind::DanglingInput: return "dangling input";
    case ErrorKind::BadInitializer: return "bad initializer";
    case ErrorKind::BadInput: return "bad input";
    case ErrorKind::Kernel: return "kernel error";
    case ErrorKind::BadOption: return "bad session option";
  }
  return "error";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(std::string(to_string(kind)) + ": " + message), kind_(kind), message_(message) {}

}  // namespace epprof::rt
