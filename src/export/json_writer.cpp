#include "export/json_writer.h"

#include <sched.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "base/thread.h"

namespace epprof::exporter {

JsonWriter::JsonWriter(int fd, size_t buffer_size) : fd_(fd) {
  const size_t size = std::max(buffer_size, kMinBufferSize);
  buf_.reset(new (std::nothrow) char[size]);
  if (!buf_) {
    fail(("cannot allocate a " + std::to_string(size) + "-byte trace buffer").c_str(), ENOMEM);
    return;
  }
  cap_ = size;
}

void JsonWriter::fail(const char* what, int err) {
  ok_ = false;
  error_ = what && *what ? std::string(what) + ": " + std::strerror(err) : std::string(std::strerror(err));
  // A zero capacity sends every inline fast path to its slow path, which
  // checks ok_ and drops the data.
  cap_ = 0;
  len_ = 0;
}

JsonWriter::JsonWriter(std::string* out, size_t buffer_size) : JsonWriter(-1, buffer_size) { out_ = out; }

JsonWriter::~JsonWriter() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

int JsonWriter::write_fd(const char* data, size_t n) const {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;  // not expected for regular files; avoid spinning forever
    data += w;
    n -= size_t(w);
  }
  return 0;
}

bool JsonWriter::write_all(const char* data, size_t n) {
  if (out_) {
    out_->append(data, n);
    return true;
  }
  if (!wait_written()) return false;  // in order after what is in flight
  if (const int err = write_fd(data, n)) {
    fail(nullptr, err);  // the caller names the file
    return false;
  }
  return true;
}

void JsonWriter::writer_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return in_flight_ != nullptr || quit_; });
    if (!in_flight_) return;  // quit_, nothing left
    const char* data = in_flight_;
    const size_t n = in_flight_len_;
    const bool skip = write_errno_ != 0;  // the file is short already: write nothing after the gap
    lock.unlock();
    const int err = skip ? 0 : write_fd(data, n);
    lock.lock();
    if (err) write_errno_ = err;
    in_flight_ = nullptr;
    cv_.notify_all();
  }
}

bool JsonWriter::wait_written() {
  if (!writer_.joinable()) return ok_;
  int err;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return in_flight_ == nullptr; });
    err = write_errno_;
  }
  if (err && ok_) fail(nullptr, err);  // the caller names the file
  return ok_;
}

bool JsonWriter::start_writer() {
  // On one CPU the writer could only take turns with the formatting.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < 2) return false;
  spare_.reset(new (std::nothrow) char[cap_]);
  if (!spare_) return false;
  try {
    writer_ = base::quiet_thread([this] { writer_loop(); });
    return true;
  } catch (const std::system_error&) {
    spare_.reset();
    return false;
  }
}

bool JsonWriter::hand_off() {
  if (!wait_written()) return false;
  if (!spare_ && !in_place_) in_place_ = !start_writer();  // the first full buffer
  if (in_place_) return write_all(buf_.get(), len_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ = buf_.get();
    in_flight_len_ = len_;
  }
  cv_.notify_all();
  buf_.swap(spare_);
  return true;
}

bool JsonWriter::flush() { return make_room() && wait_written(); }

bool JsonWriter::make_room() {
  if (!ok_) return false;
  if (len_ > 0) {
    if (out_ ? !write_all(buf_.get(), len_) : !hand_off()) return false;
    flushed_ += len_;
    len_ = 0;
  }
  return true;
}

char* JsonWriter::reserve_slow(size_t n) {
  if (!make_room()) return nullptr;
  return n <= cap_ ? buf_.get() : nullptr;
}

void JsonWriter::append_slow(const char* data, size_t n) {
  if (!ok_) return;
  // Top up the buffer so writes stay block-sized, then send what is left
  // straight to the fd if it is at least a buffer's worth.
  const size_t k = std::min(n, cap_ - len_);
  std::memcpy(buf_.get() + len_, data, k);
  len_ += k;
  data += k;
  n -= k;
  if (n == 0) return;
  if (!make_room()) return;
  if (n >= cap_) {
    if (write_all(data, n)) flushed_ += n;
    return;
  }
  std::memcpy(buf_.get(), data, n);
  len_ = n;
}

void JsonWriter::escape_byte(unsigned char c) {
  char* p = reserve(6);
  if (!p) return;
  const char* shortcut = nullptr;
  switch (c) {
    case '"': shortcut = "\\\""; break;
    case '\\': shortcut = "\\\\"; break;
    case '\b': shortcut = "\\b"; break;
    case '\f': shortcut = "\\f"; break;
    case '\n': shortcut = "\\n"; break;
    case '\r': shortcut = "\\r"; break;
    case '\t': shortcut = "\\t"; break;
    default: break;
  }
  if (shortcut) {
    p[0] = shortcut[0];
    p[1] = shortcut[1];
    len_ += 2;
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::memcpy(p, "\\u00", 4);
  p[4] = kHex[c >> 4];
  p[5] = kHex[c & 0xF];
  len_ += 6;
}

namespace {

// Length of the well-formed UTF-8 sequence starting at p (lead byte >= 0x80),
// or, if there is none, minus the length of its maximal invalid subpart: the
// longest prefix that could still begin a well-formed sequence, at least 1.
// Ranges per Unicode Table 3-7; the narrowed second-byte ranges exclude
// overlongs (E0, F0), surrogates (ED) and code points > U+10FFFF (F4).
ptrdiff_t utf8_sequence(const unsigned char* p, size_t avail) {
  const unsigned char c = p[0];
  size_t need;  // continuation bytes after the lead
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return -1;  // continuation byte, C0/C1 (always overlong), F5..FF
  }
  size_t k = 1;
  if (k < avail && p[k] >= lo && p[k] <= hi) {
    ++k;
    while (k <= need && k < avail && p[k] >= 0x80 && p[k] <= 0xBF) ++k;
  }
  return k == need + 1 ? ptrdiff_t(k) : -ptrdiff_t(k);
}

}  // namespace

void JsonWriter::utf8_run(const unsigned char* p, size_t n) {
  const char* s = reinterpret_cast<const char*>(p);
  // The run starts and ends at character boundaries (next to ASCII or the
  // string's ends), so validating it alone is exact.
  if (simdjson::validate_utf8(s, n)) {
    raw(std::string_view(s, n));
    return;
  }
  size_t copied = 0;  // bytes before this are already written
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const ptrdiff_t len = utf8_sequence(p + i, n - i);
    if (len > 0) {
      i += size_t(len);
      continue;
    }
    raw(std::string_view(s + copied, i - copied));
    raw("\xEF\xBF\xBD");  // U+FFFD
    i += size_t(-len);
    copied = i;
  }
  raw(std::string_view(s + copied, n - copied));
}

void JsonWriter::string_slow(std::string_view s) {
  if (!ok_) return;
  raw('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char* q = p + plain_prefix(reinterpret_cast<const char*>(p), size_t(end - p));
    raw(std::string_view(reinterpret_cast<const char*>(p), size_t(q - p)));
    p = q;
    if (p == end) break;
    if (*p < 0x80) {
      escape_byte(*p++);
      continue;
    }
    // Non-ASCII: take it together with following plain ASCII up to the next
    // byte that needs escaping, so mixed text is validated in one call.
    while (q < end && (*q >= 0x80 || is_plain(*q))) ++q;
    utf8_run(p, size_t(q - p));
    p = q;
  }
  raw('"');
}

JsonWriter::Fractions::Fractions() {
  for (unsigned f = 0; f < 1000; ++f) {
    char d[3] = {char('0' + f / 100), char('0' + f / 10 % 10), char('0' + f % 10)};
    unsigned n = 3;
    while (n > 0 && d[n - 1] == '0') --n;
    text[f][0] = '.';
    std::memcpy(text[f] + 1, d, 3);
    len[f] = uint8_t(n == 0 ? 0 : n + 1);
  }
}

const JsonWriter::Fractions JsonWriter::kFractions;

}  // namespace epprof::exporter
