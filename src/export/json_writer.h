// Streaming JSON text writer for trace export. It sits on the export hot path
// (tens of millions of small values per second), so it keeps its own buffer,
// writes it with write(2) in large blocks and keeps the common cases (short
// ASCII strings, integers) inline.
//
// Writing to a file is write-behind: a full buffer goes to a writer thread
// (it and a second buffer are made at the first full one; nothing is
// allocated after that) while formatting goes on in the other buffer, so
// the kernel's copy into the page cache (slow on a VM, where each fresh page
// traps) overlaps the formatting instead of following it. flush() waits for
// the writer; so does the destructor, so the fd is never written after it.
// A process allowed only one CPU writes in place, as it would gain nothing.
//
// It writes JSON *text*, not a document model: the caller emits punctuation
// with raw() and values with the typed methods. Output errors are sticky:
// after the first failure ok() is false, error() says why, and every later
// call is a cheap no-op, so an exporter can check once at the end.
#pragma once

#include <charconv>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace epprof::exporter {

class JsonWriter {
 public:
  static constexpr size_t kDefaultBufferSize = size_t(1) << 20;
  // Smaller requests are raised to this, so every fixed-size item (a number,
  // one escape) always fits in an empty buffer.
  static constexpr size_t kMinBufferSize = 256;

  // Does not take ownership of fd, which must stay open until flush() or
  // the destructor returns. If the buffer cannot be allocated the writer
  // starts in the failed state.
  explicit JsonWriter(int fd, size_t buffer_size = kDefaultBufferSize);
  // Writes into *out (appended at each flush) instead of a file: small JSON
  // values that go into another container (the SQLite trace's metadata).
  explicit JsonWriter(std::string* out, size_t buffer_size = kMinBufferSize);
  // Does NOT flush: the fd may already be closed or reused by then, and a
  // silent failure here would hide a truncated trace. Call flush() and check.
  // Waits for a buffer already handed to the writer thread.
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  // Appended as is; the caller guarantees it is valid JSON text/punctuation.
  void raw(std::string_view text) {
    if (text.size() <= cap_ - len_) {
      // An empty view may hold nullptr, which memcpy must not be given.
      if (!text.empty()) std::memcpy(buf_.get() + len_, text.data(), text.size());
      len_ += text.size();
      return;
    }
    append_slow(text.data(), text.size());
  }
  void raw(char c) {
    if (len_ < cap_) {
      buf_[len_++] = c;
      return;
    }
    append_slow(&c, 1);
  }

  // A quoted JSON string. Any byte sequence yields valid JSON: '"', '\\',
  // U+0000..U+001F and U+007F are escaped, valid UTF-8 is copied unchanged,
  // and each maximal invalid UTF-8 subpart (Unicode 15, §3.9 "U+FFFD
  // substitution of maximal subparts") becomes U+FFFD.
  void string(std::string_view s) {
    // Fast path: all printable ASCII and fits; anything else goes out of line.
    if (s.size() + 2 <= cap_ - len_ && plain_prefix(s.data(), s.size()) == s.size()) {
      char* out = buf_.get() + len_;
      out[0] = '"';
      if (!s.empty()) std::memcpy(out + 1, s.data(), s.size());
      out[s.size() + 1] = '"';
      len_ += s.size() + 2;
      return;
    }
    string_slow(s);
  }

  void u64(uint64_t v) {
    if (char* p = reserve(20)) len_ = size_t(std::to_chars(p, p + 20, v).ptr - buf_.get());
  }
  void i64(int64_t v) {
    if (char* p = reserve(20)) len_ = size_t(std::to_chars(p, p + 20, v).ptr - buf_.get());
  }

  // A timestamp or duration given in ns, written in µs. integer=true writes
  // ns / 1000 truncated toward zero (-1999 ns -> "-1", -500 ns -> "0");
  // otherwise the exact decimal value with up to three decimals and no
  // trailing zeros (1234500 -> "1234.5", -500 -> "-0.5"). No floating point.
  void micros(int64_t ns, bool integer) {
    if (integer) {
      i64(ns / 1000);  // C++ division truncates toward zero
      return;
    }
    if (char* p = reserve(kMaxMicros)) commit(put_micros(p, ns));
  }

  // Appends text[0, n) by copying kPadded bytes from `text`, which must be
  // readable that far (the tail of a padded buffer): a fixed-size copy,
  // which the compiler inlines as a few vector moves. n <= kPadded.
  template <size_t kPadded>
  void raw_padded(const char* text, size_t n) {
    static_assert(kPadded <= kMinBufferSize);
    if (kPadded <= cap_ - len_) {
      std::memcpy(buf_.get() + len_, text, kPadded);
      len_ += n;
      return;
    }
    append_slow(text, n);
  }

  // Direct formatting, for an item of known greatest size: reserve(n)
  // returns n free bytes (n <= kMinBufferSize), flushing first if needed, or
  // nullptr once the writer has failed; the put_ helpers below write at a
  // pointer and return its end, and commit(end) takes the bytes written.
  // Nothing is checked in between: the caller keeps within its n.
  char* reserve(size_t n) {
    if (n <= cap_ - len_) return buf_.get() + len_;
    return reserve_slow(n);
  }
  void commit(char* end) { len_ = size_t(end - buf_.get()); }

  // The most bytes put_micros writes: '-', 20 digits, '.', 3 digits.
  static constexpr size_t kMaxMicros = 25;
  // micros(ns, false) at p.
  static char* put_micros(char* p, int64_t ns) {
    // The magnitude in unsigned arithmetic, so that INT64_MIN is exact.
    const uint64_t mag = ns < 0 ? 0 - uint64_t(ns) : uint64_t(ns);
    if (ns < 0) *p++ = '-';
    p = std::to_chars(p, p + 20, mag / 1000).ptr;
    const unsigned frac = unsigned(mag % 1000);
    std::memcpy(p, kFractions.text[frac], 4);  // kMaxMicros leaves room for all four
    return p + kFractions.len[frac];
  }
  static char* put_u64(char* p, uint64_t v) { return std::to_chars(p, p + 20, v).ptr; }
  static char* put(char* p, std::string_view text) {
    std::memcpy(p, text.data(), text.size());
    return p + text.size();
  }

  // Writes out everything buffered and waits until it is written. False if
  // this or any earlier write failed.
  bool flush();
  bool ok() const { return ok_; }
  // Empty while ok(); else the reason, e.g. "No space left on device" for a
  // failed write (the caller knows the file's name and puts it in front).
  const std::string& error() const { return error_; }
  // Bytes of JSON produced so far, buffered ones included: the size the file
  // will have after a successful flush().
  uint64_t bytes_written() const { return flushed_ + len_; }

 private:
  // Bytes that can be copied into a string unescaped: printable ASCII except
  // '"' and '\\'. (Bytes >= 0x80 are handled by the UTF-8 path.)
  static bool is_plain(unsigned char c) {
    return static_cast<unsigned char>(c - 0x20) < 0x5F && c != '"' && c != '\\';
  }

  // Length of the leading run of plain bytes, 8 at a time: names are short,
  // so this beats both a byte loop and SIMD setup.
  static size_t plain_prefix(const char* p, size_t n) {
    constexpr uint64_t k01 = 0x0101010101010101ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      // High bit of a byte lane set iff (exactly, as a whole-word boolean)
      // some byte is < 0x20, >= 0x7F, '"' or '\\' (Hacker's Delight 6-1).
      const uint64_t quote = w ^ (k01 * '"');
      const uint64_t backslash = w ^ (k01 * '\\');
      const uint64_t bad = ((w - k01 * 0x20) & ~w) | ((w + k01) | w) | ((quote - k01) & ~quote) |
                           ((backslash - k01) & ~backslash);
      if (bad & (k01 * 0x80)) break;
    }
    while (i < n && is_plain(static_cast<unsigned char>(p[i]))) ++i;
    return i;
  }

  // The failed state sets cap_ to 0, which sends every inline fast path
  // (reserve() included) to its slow path, where it is checked.
  char* reserve_slow(size_t n);

  // The fraction of a microsecond, ".5" for 500 ns: the point and up to
  // three digits without trailing zeros, for each of 0..999 ns (0: nothing).
  // A table, so that formatting a timestamp divides only in to_chars.
  struct Fractions {
    char text[1000][4]{};
    uint8_t len[1000]{};
    Fractions();
  };
  static const Fractions kFractions;
  void append_slow(const char* data, size_t n);
  void string_slow(std::string_view s);
  void escape_byte(unsigned char c);
  void utf8_run(const unsigned char* p, size_t n);
  // write(2) of all n bytes to fd_: 0, or the errno that stopped it.
  int write_fd(const char* data, size_t n) const;
  bool write_all(const char* data, size_t n);
  void fail(const char* what, int err);

  // The write-behind (file mode). hand_off passes the full buffer to the
  // writer thread and formats on in the spare, once the writer is done with
  // it; wait_written waits until nothing is in flight. Both take a write
  // error the thread met (fail()) and return false after one.
  bool hand_off();
  bool wait_written();
  // Starts the writer thread and makes the spare buffer: false, and
  // nothing started, without a second CPU, the memory or a thread.
  bool start_writer();
  // Empties the buffer for more (handed off, not waited for): false once
  // the writer has failed.
  bool make_room();
  void writer_loop();

  int fd_;
  std::string* out_ = nullptr;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t len_ = 0;
  uint64_t flushed_ = 0;
  bool ok_ = true;
  std::string error_;

  // The write-behind: the second buffer and the thread, both made by the
  // first hand-off, or in_place_.
  std::unique_ptr<char[]> spare_;
  bool in_place_ = false;  // no write-behind: each full buffer is written by the caller
  std::thread writer_;
  // Shared with the writer thread, under mu_ (the buffers' contents are
  // handed over by it too): the buffer in flight, the first errno.
  std::mutex mu_;
  std::condition_variable cv_;
  const char* in_flight_ = nullptr;
  size_t in_flight_len_ = 0;
  int write_errno_ = 0;
  bool quit_ = false;
};

}  // namespace epprof::exporter
