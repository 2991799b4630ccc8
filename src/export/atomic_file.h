// A file that appears at its final path only when complete: data goes to a
// temporary in the same directory (so rename(2) is atomic) and commit()
// renames it into place. Creating the temporary up front is also how an
// unwritable trace path is reported when profiling starts, not at its end.
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace epprof::exporter {

class AtomicFile {
 public:
  // Creates ".<basename>.tmp.XXXXXX" next to final_path (mode 0644 minus the
  // umask). On failure returns nullptr and, if error is non-null, sets it to
  // a message naming the path and the reason, e.g.
  // "cannot create trace file in '/nonexistent/dir': No such file or directory".
  static std::unique_ptr<AtomicFile> create(const std::string& final_path, std::string* error);

  // Unlinks the temporary unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Open for writing until commit(); -1 afterwards.
  int fd() const { return fd_; }
  const std::string& final_path() const { return final_path_; }
  const std::string& temp_path() const { return temp_path_; }

  // Closes the fd and renames the temporary onto final_path, replacing any
  // file there (a symlink there is replaced, not followed). No fsync: a trace need not survive a power cut, and fsync
  // of a large file would stall the end of profiling. On failure the
  // temporary is removed, false is returned and *error (if non-null) is set.
  // Only the first call can succeed.
  bool commit(std::string* error);

 private:
  AtomicFile(std::string final_path, std::string temp_path, int fd)
      : final_path_(std::move(final_path)), temp_path_(std::move(temp_path)), fd_(fd) {}

  std::string final_path_;
  std::string temp_path_;
  int fd_;
  bool done_ = false;  // committed, or commit failed and cleaned up
};

}  // namespace epprof::exporter
