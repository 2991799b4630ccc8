#include "export/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

namespace epprof::exporter {

namespace {

std::string reason(int err) { return std::strerror(err); }

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

}  // namespace

std::unique_ptr<AtomicFile> AtomicFile::create(const std::string& final_path, std::string* error) {
  auto set_error = [error](std::string msg) {
    if (error) *error = std::move(msg);
  };
  const size_t slash = final_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : final_path.substr(0, slash);
  const std::string base = slash == std::string::npos ? final_path : final_path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") {
    set_error("cannot create trace file '" + final_path + "': not a file name");
    return nullptr;
  }
  // rename() onto a directory would only fail at commit, after the run.
  struct stat st;
  if (stat(final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    set_error("cannot create trace file '" + final_path + "': " + reason(EISDIR));
    return nullptr;
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = dir + "/." + base + ".tmp." + random_suffix();
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return std::unique_ptr<AtomicFile>(new AtomicFile(final_path, std::move(temp), fd));
    if (errno == EEXIST || errno == EINTR) continue;
    set_error("cannot create trace file in '" + dir + "': " + reason(errno));
    return nullptr;
  }
  set_error("cannot create trace file in '" + dir + "': " + reason(EEXIST));
  return nullptr;
}

bool AtomicFile::commit(std::string* error) {
  auto failed = [&](std::string msg) {
    if (error) *error = std::move(msg);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(temp_path_.c_str());
    done_ = true;
    return false;
  };
  if (done_) {
    if (error) *error = "trace file '" + final_path_ + "' was already committed";
    return false;
  }
  // close() can report deferred write errors (NFS, quotas): the data is bad.
  // EINTR is not one: on Linux the fd is closed and nothing was lost.
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) return failed("cannot write trace file '" + temp_path_ + "': " + reason(errno));
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0)
    return failed("cannot rename '" + temp_path_ + "' to '" + final_path_ + "': " + reason(errno));
  done_ = true;
  return true;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!done_) ::unlink(temp_path_.c_str());
}

}  // namespace epprof::exporter
