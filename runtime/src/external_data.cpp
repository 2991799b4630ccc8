#include "external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "epprof/rt/error.h"

namespace epprof::rt::detail {

namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& location, const std::string& why) {
  throw Error(ErrorKind::InvalidModel, what + " has external data at location '" + location + "', " + why);
}

// A non-negative decimal integer that fits in off_t: digits only, no sign,
// no spaces (strtoll would accept " 12", "+12" and "-0").
bool parse_offset(const std::string& s, off_t& out) {
  if (s.empty() || s.size() > 19) return false;
  unsigned long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');  // at most 19 digits: no overflow
  }
  if (v > static_cast<unsigned long long>(std::numeric_limits<off_t>::max())) return false;
  out = static_cast<off_t>(v);
  return true;
}

// `path` with its last component removed; "." for a bare file name.
std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

ExternalData::ExternalData(const std::string& model_path) : has_dir_(true), dir_(directory_of(model_path)) {}

ExternalData::~ExternalData() {
  for (auto& kv : files_) ::close(kv.second.fd);
}

const ExternalData::File& ExternalData::open_file(const std::string& what, const std::string& location) {
  if (real_dir_.empty()) {
    char buf[PATH_MAX];
    if (!::realpath(dir_.c_str(), buf))
      refuse(what, location, "but the model's directory '" + dir_ + "' cannot be resolved: " + std::strerror(errno));
    real_dir_ = buf;
  }
  const std::string joined = dir_ + "/" + location;
  char buf[PATH_MAX];
  if (!::realpath(joined.c_str(), buf))
    refuse(what, location, "which cannot be opened (" + joined + "): " + std::strerror(errno));
  const std::string resolved = buf;
  const std::string prefix = real_dir_ == "/" ? real_dir_ : real_dir_ + "/";
  if (resolved.compare(0, prefix.size(), prefix) != 0 || resolved.size() == prefix.size())
    refuse(what, location, "which resolves to '" + resolved + "', outside the model's directory '" + real_dir_ + "'");
  if (auto it = files_.find(resolved); it != files_.end()) return it->second;
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
  // below); O_NOFOLLOW: `resolved` has no symlink left unless one was put
  // there since realpath looked.
  const int fd = ::open(resolved.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) refuse(what, location, "which cannot be opened (" + resolved + "): " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    refuse(what, location, "which cannot be read (" + resolved + "): " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(what, location, "which is not a regular file (" + resolved + ")");
  }
  return files_.emplace(resolved, File{fd, st.st_size}).first->second;
}

ExternalData::Range ExternalData::locate(const onnx::TensorProto& p, const std::string& what, size_t bytes) {
  const std::string* location = nullptr;
  const std::string* offset_text = nullptr;
  const std::string* length_text = nullptr;
  for (const auto& kv : p.external_data()) {
    const std::string& key = kv.key();
    const std::string** slot = nullptr;
    if (key == "location") slot = &location;
    else if (key == "offset") slot = &offset_text;
    else if (key == "length") slot = &length_text;
    else if (key == "checksum") continue;  // SHA1 of the data: not verified (ONNX Runtime does not either)
    else if (key.compare(0, 9, "prepacked") == 0) continue;  // ONNX Runtime's pre-packed weights: not used
    else
      throw Error(ErrorKind::InvalidModel, what + " has an unknown external_data key '" + key +
                                               "' (known: location, offset, length, checksum)");
    if (*slot) throw Error(ErrorKind::InvalidModel, what + " has external_data key '" + key + "' twice");
    *slot = &kv.value();
  }
  if (!location || location->empty())
    throw Error(ErrorKind::InvalidModel, what + " has data_location EXTERNAL but no external_data 'location'");
  const std::string& loc = *location;
  if (!has_dir_)
    refuse(what, loc, "which is read relative to the model file's directory: a model loaded from bytes has none "
                      "(load it from its path)");
  if (loc.find('\0') != std::string::npos) refuse(what, loc, "which contains a NUL byte");
  if (loc[0] == '/') refuse(what, loc, "an absolute path (locations are relative to the model's directory)");
  for (size_t start = 0; start <= loc.size();) {
    size_t end = loc.find('/', start);
    if (end == std::string::npos) end = loc.size();
    if (loc.compare(start, end - start, "..") == 0)
      refuse(what, loc, "which has a '..' component (locations stay inside the model's directory)");
    start = end + 1;
  }
  off_t offset = 0;
  if (offset_text && !parse_offset(*offset_text, offset))
    refuse(what, loc, "whose offset '" + *offset_text + "' is not a non-negative decimal integer");
  if (length_text) {
    off_t length = 0;
    if (!parse_offset(*length_text, length))
      refuse(what, loc, "whose length '" + *length_text + "' is not a non-negative decimal integer");
    if (static_cast<unsigned long long>(length) != bytes)
      refuse(what, loc, "whose length " + *length_text + " is not the tensor's size, " + std::to_string(bytes) +
                            " bytes (dims × element size)");
  }
  const File& file = open_file(what, loc);
  // offset + bytes <= size, written so that it cannot overflow.
  if (offset > file.size || bytes > static_cast<unsigned long long>(file.size - offset))
    refuse(what, loc, "whose range (offset " + std::to_string(offset) + ", " + std::to_string(bytes) +
                          " bytes) runs past the end of the file (" + std::to_string(file.size) + " bytes)");
  used_ = true;
  return Range{file.fd, offset, bytes, loc};
}

void ExternalData::read(const Range& r, const std::string& what, void* dst) const {
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < r.bytes) {
    const size_t chunk = std::min<size_t>(r.bytes - done, size_t{1} << 30);
    const ssize_t got = ::pread(r.fd, out + done, chunk, r.offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) refuse(what, r.location, std::string("which cannot be read: ") + std::strerror(errno));
    if (got == 0) refuse(what, r.location, "which ended before the tensor's bytes (it shrank while loading)");
    done += static_cast<size_t>(got);
  }
}

}  // namespace epprof::rt::detail
