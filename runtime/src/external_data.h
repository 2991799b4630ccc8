// ONNX external data: a TensorProto with data_location == EXTERNAL keeps its
// bytes in a file named by its `external_data` entries, relative to the model
// file's directory (how models over protobuf's 2 GiB limit store weights).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <map>
#include <string>

#include "onnx/onnx_pb.h"

namespace epprof::rt::detail {

// The external files of one model load. Every refusal is an
// Error(InvalidModel) naming the tensor, the location and the reason.
//
// Entries: `location` (required), `offset` and `length` (optional, decimal
// byte counts), `checksum` (SHA1 of the data; not verified, as ONNX Runtime
// does not verify it either) and ONNX Runtime's own `prepacked*` entries
// (pre-packed weight blobs for its kernels; not used here). Any other key,
// an empty value or a key given twice is refused, as ONNX Runtime does.
// Without `length` the tensor's dims × element size bytes are read from
// `offset` (ONNX Runtime's reading); with it, it must equal that size.
//
// A location is refused when it is empty, absolute, has a `..` component, or
// resolves (symlinks followed) outside the model's directory, or when it is
// not an existing regular file or the byte range runs past its end. Only the
// tensor's bytes are read (pread), into memory the caller allocates after
// `locate` has proved the file holds them; each file is opened once per load.
class ExternalData {
 public:
  // No model directory (a model loaded from bytes): every external tensor is
  // refused with an error saying that external data needs the model's path.
  ExternalData() = default;
  // `model_path`: the model file as given; locations are relative to its directory.
  explicit ExternalData(const std::string& model_path);
  ~ExternalData();
  ExternalData(const ExternalData&) = delete;
  ExternalData& operator=(const ExternalData&) = delete;

  struct Range {
    int fd = -1;
    off_t offset = 0;
    size_t bytes = 0;
    std::string location;
  };
  // Checks `proto`'s entries and that its file holds `bytes` bytes (the
  // tensor's size) at its offset; `what` names the tensor ("initializer 'W'").
  Range locate(const onnx::TensorProto& proto, const std::string& what, size_t bytes);
  // Reads the range into `dst` (range.bytes bytes).
  void read(const Range& range, const std::string& what, void* dst) const;

  // Whether any tensor of this load was external (locate succeeded).
  bool used() const { return used_; }

 private:
  struct File {
    int fd;
    off_t size;
  };
  const File& open_file(const std::string& what, const std::string& location);

  bool has_dir_ = false;
  std::string dir_;       // the model's directory as given
  std::string real_dir_;  // its realpath, resolved on first use
  std::map<std::string, File> files_;  // by resolved path
  bool used_ = false;
};

}  // namespace epprof::rt::detail
