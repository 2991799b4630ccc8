#include "io/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

namespace epprof::io {

namespace {

std::string reason(int err) { return std::strerror(err); }

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What a non-regular file is, for the message that refuses it.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Follows the symlinks at the last component of `path`; directories above
// it are resolved by the kernel as usual. A dangling link yields its target,
// which will be created. Any error other than a loop is left for open() to
// report with the directory's name.
bool follow_symlinks(std::string path, std::string* out, std::string* error) {
  for (int hops = 0; hops < 40; ++hops) {  // Linux's own limit (MAXSYMLINKS)
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
      *out = std::move(path);
      return true;
    }
    std::string target(size_t(st.st_size > 0 ? st.st_size : 4095) + 1, '\0');
    const ssize_t n = readlink(path.c_str(), target.data(), target.size());
    if (n < 0 || size_t(n) >= target.size()) {  // changed under us
      *error = "cannot read the symlink '" + path + "': " + reason(n < 0 ? errno : EAGAIN);
      return false;
    }
    target.resize(size_t(n));
    path = target[0] == '/' ? target : dir_of(path) + "/" + target;
  }
  *error = reason(ELOOP);
  return false;
}

// Six random name characters. Not mkstemp(3) itself: it creates mode 0600,
// and fixing that with fchmod would need the process umask, which can only
// be read by racily changing it. open(O_EXCL) with our own names is as safe.
std::string random_suffix() {
  static std::atomic<uint64_t> counter{0};
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = uint64_t(ts.tv_nsec) ^ (uint64_t(ts.tv_sec) << 30) ^ (uint64_t(getpid()) << 40) ^
               (counter.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ull);
  // splitmix64 finaliser, so consecutive calls give unrelated names
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(6, '0');
  for (char& c : s) {
    c = kChars[x % 62];
    x /= 62;
  }
  return s;
}

std::string temp_name(const std::string& target) {
  return dir_of(target) + "/." + base_of(target) + ".tmp." + random_suffix();
}

// An unnamed temporary can be given a name only through /proc/self/fd
// (linkat with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH).
bool proc_fd_available() {
  static const bool available = access("/proc/self/fd", X_OK) == 0;
  return available;
}

// Blocks every catchable signal on this thread for its lifetime, so that a
// handler that exits cannot run here between naming a temporary and
// renaming it.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t old_;
};

// The named temporaries that exist now, for remove_temporaries_at_exit()
// to unlink from a signal handler: fixed slots (no allocation), claimed and
// released with lock-free atomics, a path readable once its slot is live.
struct NamedTemporary {
  static constexpr int kFree = 0, kFilling = 1, kLive = 2;
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
static_assert(std::atomic<int>::is_always_lock_free, "used from signal handlers");
constexpr int kNamedSlots = 16;  // more at once are not covered
NamedTemporary g_named[kNamedSlots];

std::atomic<bool> g_force_named{false};

int remember_named(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kNamedSlots; ++i) {
    int expected = NamedTemporary::kFree;
    if (!g_named[i].state.compare_exchange_strong(expected, NamedTemporary::kFilling)) continue;
    std::memcpy(g_named[i].path, path.c_str(), path.size() + 1);
    g_named[i].state.store(NamedTemporary::kLive, std::memory_order_release);
    return i;
  }
  return -1;
}

void forget_named(int slot) {
  if (slot >= 0) g_named[slot].state.store(NamedTemporary::kFree, std::memory_order_release);
}

}  // namespace

void remove_temporaries_at_exit() noexcept {
  for (NamedTemporary& t : g_named)
    if (t.state.load(std::memory_order_acquire) == NamedTemporary::kLive) ::unlink(t.path);
}

void force_named_temporaries_for_testing(bool on) { g_force_named.store(on); }

bool check_output_path(const std::string& path, const std::vector<std::string>& inputs, std::string* resolved,
                       std::string* error) {
  std::string ignored;
  std::string& err = error ? *error : ignored;
  const std::string base = base_of(path);
  if (base.empty() || base == "." || base == "..") {
    err = "cannot write '" + path + "': not a file name";
    return false;
  }
  std::string target, why;
  if (!follow_symlinks(path, &target, &why)) {
    err = "cannot write '" + path + "': " + why;
    return false;
  }
  const std::string shown = target == path ? "'" + path + "'" : "'" + path + "' (a symlink to '" + target + "')";
  struct stat out;
  if (stat(target.c_str(), &out) == 0) {
    if (!S_ISREG(out.st_mode)) {
      err = "cannot write " + shown + ": it is " + kind_of(out.st_mode) + "; only a regular file is replaced";
      return false;
    }
    for (const std::string& input : inputs) {
      struct stat in;
      if (stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
        err = "cannot write " + shown + ": it is the input '" + input + "'; choose another output path";
        return false;
      }
    }
  }
  if (resolved) *resolved = std::move(target);
  return true;
}

std::unique_ptr<AtomicFile> AtomicFile::create(const std::string& final_path, std::string* error,
                                               const std::vector<std::string>& inputs) {
  std::string ignored;
  std::string& err = error ? *error : ignored;
  std::string target;
  if (!check_output_path(final_path, inputs, &target, &err)) return nullptr;
  const std::string dir = dir_of(target);
  if (proc_fd_available() && !g_force_named.load()) {
    const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) return std::unique_ptr<AtomicFile>(new AtomicFile(final_path, std::move(target), {}, fd));
    // Not supported by this kernel or file system: use a named temporary.
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
      err = "cannot create a file in '" + dir + "': " + reason(errno);
      return nullptr;
    }
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = temp_name(target);
    SignalsBlocked blocked;  // the file and its slot come into being together
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const int slot = remember_named(temp);
      return std::unique_ptr<AtomicFile>(new AtomicFile(final_path, std::move(target), std::move(temp), fd, slot));
    }
    if (errno == EEXIST || errno == EINTR) continue;
    err = "cannot create a file in '" + dir + "': " + reason(errno);
    return nullptr;
  }
  err = "cannot create a file in '" + dir + "': " + reason(EEXIST);
  return nullptr;
}

bool AtomicFile::write(std::string_view data, std::string* error) {
  while (!data.empty()) {
    const ssize_t n = fd_ < 0 ? (errno = EBADF, -1) : ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error) *error = "cannot write '" + target_path_ + "': " + reason(n < 0 ? errno : EIO);
      return false;
    }
    data.remove_prefix(size_t(n));
  }
  return true;
}

// Links the unnamed temporary to a fresh hidden name in the target's
// directory; the caller blocks signals, so the name is remembered for
// remove_temporaries_at_exit() before any handler can run.
bool AtomicFile::name_temporary(std::string* error) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
  for (int attempt = 0;; ++attempt) {
    std::string temp = temp_name(target_path_);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      named_slot_ = remember_named(temp);
      temp_path_ = std::move(temp);
      return true;
    }
    if (errno != EEXIST || attempt == 100) {
      *error = "cannot create a file in '" + dir_of(target_path_) + "': " + reason(errno);
      return false;
    }
  }
}

std::string AtomicFile::temporary_path(std::string* error) {
  if (done_ || fd_ < 0) {
    if (error) *error = "'" + final_path_ + "' was already committed";
    return {};
  }
  if (temp_path_.empty()) {
    SignalsBlocked blocked;
    std::string e;
    if (!name_temporary(&e)) {
      if (error) *error = e;
      return {};
    }
  }
  return temp_path_;
}

bool AtomicFile::commit(std::string* error) {
  auto failed = [&](std::string msg) {
    if (error) *error = std::move(msg);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
    forget_named(std::exchange(named_slot_, -1));
    done_ = true;
    return false;
  };
  if (done_) {
    if (error) *error = "'" + final_path_ + "' was already committed";
    return false;
  }
  SignalsBlocked blocked;
  std::string name_error;
  if (temp_path_.empty() && !name_temporary(&name_error)) return failed(name_error);
  // close() can report deferred write errors (NFS, quotas): the data is bad.
  // EINTR is not one: on Linux the fd is closed and nothing was lost.
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) return failed("cannot write '" + target_path_ + "': " + reason(errno));
  if (::rename(temp_path_.c_str(), target_path_.c_str()) != 0)
    return failed("cannot rename '" + temp_path_ + "' to '" + target_path_ + "': " + reason(errno));
  forget_named(std::exchange(named_slot_, -1));
  done_ = true;
  return true;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!done_ && !temp_path_.empty()) {
    SignalsBlocked blocked;  // the slot goes with the file
    ::unlink(temp_path_.c_str());
    forget_named(named_slot_);
  }
}

}  // namespace epprof::io
