// Errors of the reference runtime: one exception type with a machine-readable kind.
#pragma once
#include <stdexcept>
#include <string>

namespace epprof::rt {

enum class ErrorKind {
  Io,                // file cannot be opened or read / written
  InvalidModel,      // not a model, truncated, malformed graph
  UnsupportedOpset,  // opset newer than the runtime supports
  UnsupportedOp,     // no execution provider claims a node
  Cycle,             // the graph is not a DAG
  DanglingInput,     // a node input produced by nobody
  BadInitializer,    // initializer data disagrees with its dims or type
  BadInput,          // run-time input of the wrong name, type or shape
  Kernel,            // a kernel rejected its inputs at run time
  BadOption,         // a SessionOptions value out of range
};

const char* to_string(ErrorKind kind) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const noexcept { return kind_; }
  const std::string& message() const noexcept { return message_; }  // what() without the kind prefix

 private:
  ErrorKind kind_;
  std::string message_;
};

}  // namespace epprof::rt
