// Progress on stderr while reading a large trace: shown only when stderr is
// a terminal and only once reading has taken more than a second.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace epprof::cli {

class TraceProgress {
 public:
  explicit TraceProgress(std::string label)
      : label_(std::move(label)), tty_(isatty(2) == 1), start_(std::chrono::steady_clock::now()) {}
  ~TraceProgress() {
    if (shown_) std::fprintf(stderr, "\n");
  }
  TraceProgress(const TraceProgress&) = delete;
  TraceProgress& operator=(const TraceProgress&) = delete;

  // For ReadOptions::progress / LoadOptions::progress.
  std::function<void(uint64_t, uint64_t)> callback() {
    return [this](uint64_t done, uint64_t total) { update(done, total); };
  }

  void update(uint64_t done, uint64_t total) {
    if (!tty_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    shown_ = true;
    if (total)
      std::fprintf(stderr, "\r%s: %llu / %llu MiB (%d%%)", label_.c_str(), (unsigned long long)(done >> 20),
                   (unsigned long long)(total >> 20), int(100.0 * double(done) / double(total)));
    else
      std::fprintf(stderr, "\r%s: %llu MiB", label_.c_str(), (unsigned long long)(done >> 20));
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace epprof::cli
