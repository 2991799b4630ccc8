// The rules for every file epprof writes (traces, reports, merged traces,
// saved tensors), in one place:
//  - a regular file at the path is replaced atomically: the data goes to an
//    unnamed temporary (O_TMPFILE) in the same directory, which is given a
//    name and renamed into place only by commit(), so an error, a signal or
//    even SIGKILL before that leaves nothing behind;
//  - a directory, device, FIFO or socket at the path is refused;
//  - a symlink at the path is followed (to its final target, which may not
//    exist yet) and that target is replaced, in the target's directory;
//  - a path that is the same file (device and inode) as one of the
//    command's inputs is refused.
// Creating the temporary up front is also how an unwritable path is reported
// when the work starts, not at its end.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace epprof::io {

// Applies the rules above to `path` without creating anything. `inputs` are
// the paths the command reads (ones that do not exist are ignored). On
// success sets *resolved (if non-null) to the path that will be replaced:
// `path` itself, or the final target of the symlink there. On failure
// returns false and sets *error (if non-null) to a message that names the
// path and the reason, e.g. "cannot write 'out': it is a FIFO".
bool check_output_path(const std::string& path, const std::vector<std::string>& inputs, std::string* resolved,
                       std::string* error);

// For a signal handler about to _exit: unlinks the named temporaries that
// exist now (those of the O_TMPFILE path between its naming and its rename,
// and those of the named fallback, used where O_TMPFILE is not available).
// Async-signal-safe: lock-free atomics and unlink only. Up to 16 temporaries
// at once are covered. Each copy of this file (libepprof, the CLI's report
// library) keeps its own; the public epprof_remove_temporary_files() calls
// libepprof's.
void remove_temporaries_at_exit() noexcept;

// Tests: use the named fallback even where O_TMPFILE works.
void force_named_temporaries_for_testing(bool on);

class AtomicFile {
 public:
  // Checks `final_path` with check_output_path(final_path, inputs) and opens
  // the temporary (mode 0644 minus the umask) in the directory of the
  // resolved path. On failure returns nullptr and sets *error (if non-null)
  // to a message naming the path and the reason, e.g.
  // "cannot create trace file in '/nonexistent/dir': No such file or directory".
  static std::unique_ptr<AtomicFile> create(const std::string& final_path, std::string* error,
                                            const std::vector<std::string>& inputs = {});

  // Discards the temporary unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Open for writing until commit(); -1 afterwards.
  int fd() const { return fd_; }
  // The path as given, and the file that commit() replaces (they differ
  // when the path is a symlink).
  const std::string& final_path() const { return final_path_; }
  const std::string& target_path() const { return target_path_; }

  // Gives the temporary its name now rather than at commit() and returns
  // it, for writers that need a path rather than fd(): SQLite, which opens
  // a path with O_NOFOLLOW, so "/proc/self/fd/N" will not do. It is a
  // hidden file beside the target (".NAME.tmp.XXXXXX"), removed like any
  // named temporary: by the destructor, by a failed commit and by
  // remove_temporaries_at_exit(); only a process killed outright (SIGKILL)
  // leaves it. Empty, with *error (if non-null) naming the directory and
  // the reason, on failure.
  std::string temporary_path(std::string* error);

  // Appends all of `data` to the temporary, retrying short writes. On
  // failure returns false and sets *error (if non-null) to a message naming
  // target_path() and the reason (e.g. "No space left on device").
  bool write(std::string_view data, std::string* error);

  // Names the temporary and renames it onto target_path(): two system calls,
  // with the catchable signals blocked on the calling thread in between, so
  // a handler that exits cannot run there and leave the named temporary
  // behind; a handler on another thread can call remove_temporaries_at_exit()
  // (the epprof CLI's forwards the signal to the main thread instead). No fsync: a trace need not survive a power cut, and fsync of a
  // large file would stall the end of profiling. On failure nothing is left
  // behind, false is returned and *error (if non-null) names the path and
  // the reason. Only the first call can succeed.
  bool commit(std::string* error);

 private:
  AtomicFile(std::string final_path, std::string target_path, std::string temp_path, int fd, int named_slot = -1)
      : final_path_(std::move(final_path)),
        target_path_(std::move(target_path)),
        temp_path_(std::move(temp_path)),
        fd_(fd),
        named_slot_(named_slot) {}

  bool name_temporary(std::string* error);

  std::string final_path_;
  std::string target_path_;
  // Empty while the temporary is unnamed (O_TMPFILE); a named temporary is
  // used only where the file system or a missing /proc rules that out.
  std::string temp_path_;
  int fd_;
  int named_slot_;  // its slot for remove_temporaries_at_exit(), or -1
  bool done_ = false;  // committed, or commit failed and cleaned up
};

}  // namespace epprof::io
