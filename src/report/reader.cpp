#include "report/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "report/db_reader.h"

namespace epprof::report {

const Arg* Event::arg(std::string_view key) const {
  for (const Arg& a : args)
    if (a.key == key) return &a;
  return nullptr;
}

bool arg_as_int(const Arg& a, int64_t* out) {
  if (a.kind != ValueKind::kString && a.kind != ValueKind::kNumber) return false;
  std::string s(a.value);
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool arg_as_double(const Arg& a, double* out) {
  if (a.kind != ValueKind::kString && a.kind != ValueKind::kNumber) return false;
  std::string s(a.value);
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

namespace {

namespace od = simdjson::ondemand;

std::string describe_byte(int c) {
  if (c < 0) return "end of file";
  char buf[32];
  if (c >= 0x20 && c < 0x7f)
    std::snprintf(buf, sizeof buf, "'%c'", c);
  else
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
  return buf;
}

// Bytes from a file descriptor or from memory, through one growable buffer
// that always has simdjson's padding after its end.
class Input {
 public:
  Input(int fd, std::string_view mem, size_t chunk) : fd_(fd), mem_(mem), cap_(chunk < 4096 ? 4096 : chunk) {
    buf_.reset(new char[cap_ + simdjson::SIMDJSON_PADDING]);
  }

  const char* data() const { return buf_.get(); }
  size_t size() const { return len_; }
  uint64_t base() const { return base_; }  // file offset of data()[0]
  uint64_t consumed() const { return base_; }
  const std::string& io_error() const { return io_error_; }

  // Keeps bytes from `keep` on, moves them to the front and reads more.
  // `keep` becomes 0. False when nothing more could be read.
  bool refill(size_t& keep) {
    if (eof_) return false;
    const size_t kept = len_ - keep;
    if (kept * 2 > cap_) {  // one value fills half the buffer: grow it
      size_t ncap = cap_ * 2;
      std::unique_ptr<char[]> nb(new char[ncap + simdjson::SIMDJSON_PADDING]);
      std::memcpy(nb.get(), buf_.get() + keep, kept);
      buf_ = std::move(nb);
      cap_ = ncap;
    } else if (keep) {
      std::memmove(buf_.get(), buf_.get() + keep, kept);
    }
    base_ += keep;
    len_ = kept;
    keep = 0;
    const size_t before = len_;
    while (len_ < cap_) {
      size_t n = read_some(buf_.get() + len_, cap_ - len_);
      if (n == 0) break;
      len_ += n;
    }
    std::memset(buf_.get() + len_, ' ', simdjson::SIMDJSON_PADDING);
    return len_ > before;
  }

 private:
  size_t read_some(char* dst, size_t n) {
    if (fd_ < 0) {
      size_t take = std::min(n, mem_.size() - mem_pos_);
      std::memcpy(dst, mem_.data() + mem_pos_, take);
      mem_pos_ += take;
      if (take == 0) eof_ = true;
      return take;
    }
    for (;;) {
      ssize_t r = ::read(fd_, dst, n);
      if (r > 0) return size_t(r);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) io_error_ = std::strerror(errno);
      eof_ = true;
      return 0;
    }
  }

  int fd_;
  std::string_view mem_;
  size_t mem_pos_ = 0;
  size_t cap_;
  std::unique_ptr<char[]> buf_;
  size_t len_ = 0;
  uint64_t base_ = 0;
  bool eof_ = false;
  std::string io_error_;
};

// One event (or other top-level value) may not exceed this: a file with an
// unbalanced bracket would otherwise be buffered whole.
constexpr size_t kMaxValueBytes = size_t(256) << 20;

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Finds the end of the string whose opening quote is at d[i]. Returns the
// index after the closing quote, or 0 if the window ends first.
inline size_t scan_string(const char* d, size_t i, size_t n) {
  size_t j = i + 1;
  for (;;) {
    const void* q = j < n ? std::memchr(d + j, '"', n - j) : nullptr;
    if (!q) return 0;
    size_t k = size_t(static_cast<const char*>(q) - d);
    size_t bs = 0;
    while (k - bs > i + 1 && d[k - bs - 1] == '\\') ++bs;
    if (bs % 2 == 0) return k + 1;
    j = k + 1;
  }
}

// Returns the index after the value starting at d[i], or 0 when the window
// ends first. Only the extent is found; simdjson checks the content.
size_t scan_value(const char* d, size_t i, size_t n) {
  char c = d[i];
  if (c == '"') return scan_string(d, i, n);
  if (c != '{' && c != '[') {  // number or literal
    size_t j = i;
    while (j < n && !is_ws(d[j]) && d[j] != ',' && d[j] != ']' && d[j] != '}') ++j;
    return j < n ? j : 0;
  }
  int depth = 0;
  while (i < n) {
    c = d[i];
    if (c == '"') {
      i = scan_string(d, i, n);
      if (i == 0) return 0;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
    ++i;
  }
  return 0;
}

ValueKind kind_of(od::json_type t) {
  switch (t) {
    case od::json_type::object: return ValueKind::kObject;
    case od::json_type::array: return ValueKind::kArray;
    case od::json_type::number: return ValueKind::kNumber;
    case od::json_type::string: return ValueKind::kString;
    case od::json_type::boolean: return ValueKind::kBool;
    default: return ValueKind::kNull;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// A strict JSON (RFC 8259) syntax check of one value that says where it
// fails. Slower than simdjson's DOM parser, so it runs only on what that
// parser refused: to name the first bad byte, and to accept what is valid
// JSON but beyond simdjson (integers wider than 64 bits).
class SyntaxCheck {
 public:
  SyntaxCheck(const char* p, size_t n) : p_(reinterpret_cast<const unsigned char*>(p)), n_(n) {}

  // True if p[0, n) is one JSON value, optionally surrounded by whitespace.
  // Otherwise where() is the offset of the first bad byte and what() says
  // what was expected there.
  bool ok() {
    ws();
    if (!value(0)) return false;
    ws();
    return i_ == n_ || fail("nothing after the value");
  }
  size_t where() const { return i_; }
  const std::string& what() const { return what_; }

 private:
  static constexpr int kMaxDepth = 1024;  // simdjson's default

  bool fail(const char* expected) {
    what_ = std::string("expected ") + expected + ", found " + (i_ < n_ ? describe_byte(p_[i_]) : "end of input");
    return false;
  }
  int peek() const { return i_ < n_ ? p_[i_] : -1; }
  void ws() {
    while (i_ < n_ && is_ws(char(p_[i_]))) ++i_;
  }
  bool digits() {
    if (peek() < '0' || peek() > '9') return fail("a digit");
    while (peek() >= '0' && peek() <= '9') ++i_;
    return true;
  }
  bool literal(const char* word) {
    for (const char* w = word; *w; ++w, ++i_)
      if (peek() != *w) return fail(word);
    return true;
  }
  bool number() {
    if (peek() == '-') ++i_;
    if (peek() == '0') ++i_;
    else if (!digits()) return false;
    if (peek() == '.' && (++i_, !digits())) return false;
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!digits()) return false;
    }
    return true;
  }
  bool string() {
    ++i_;  // the opening quote
    for (;;) {
      const int c = peek();
      if (c < 0) return fail("'\"' closing the string");
      if (c == '"') return ++i_, true;
      if (c < 0x20) return fail("a character (control bytes must be escaped)");
      if (c == '\\') {
        ++i_;
        const int e = peek();
        if (e == 'u') {
          ++i_;
          for (int k = 0; k < 4; ++k, ++i_)
            if (!std::isxdigit(peek())) return fail("4 hex digits after \\u");
          continue;
        }
        if (e < 0 || !std::strchr("\"\\/bfnrt", e)) return fail("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
        ++i_;
        continue;
      }
      if (c < 0x80) {
        ++i_;
        continue;
      }
      const size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      if (i_ + len > n_ || !simdjson::validate_utf8(reinterpret_cast<const char*>(p_ + i_), len))
        return fail("valid UTF-8");
      i_ += len;
    }
  }
  bool value(int depth) {
    if (depth > kMaxDepth) return fail("less nesting (over 1024 levels)");
    const int c = peek();
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    if (c != '{' && c != '[') return fail("a value");
    const int close = c == '{' ? '}' : ']';
    ++i_;
    ws();
    if (peek() == close) return ++i_, true;
    for (;;) {
      if (close == '}') {
        if (peek() != '"') return fail("a member name");
        if (!string()) return false;
        ws();
        if (peek() != ':') return fail("':'");
        ++i_;
        ws();
      }
      if (!value(depth + 1)) return false;
      ws();
      if (peek() == close) return ++i_, true;
      if (peek() != ',') return fail(close == '}' ? "',' or '}'" : "',' or ']'");
      ++i_;
      ws();
    }
  }

  const unsigned char* p_;
  size_t n_;
  size_t i_ = 0;
  std::string what_;
};

class Reader {
 public:
  Reader(Input& in, const EventCallback& cb, const ReadOptions& opt, uint64_t total)
      : in_(in), cb_(cb), opt_(opt), total_(total) {}

  ReadResult run() {
    ReadResult r;
    r.bytes = total_;
    size_t pos = 0;
    in_.refill(pos);
    int c = peek(pos);
    if (c < 0) {
      fail(in_.io_error().empty() ? (total_ == 0 && in_.size() == 0 ? "the file is empty"
                                                                     : "the file holds only whitespace")
                                  : "read error: " + in_.io_error());
    } else if (c == '[') {
      ++pos;
      events(pos);
    } else if (c == '{') {
      ++pos;
      object(pos);
    } else {
      fail("not a trace: expected '[' or '{' at byte " + std::to_string(offset(pos)) + ", found " +
           describe_byte(c));
    }
    if (ok_) {
      c = peek(pos);
      if (c >= 0)
        fail("unexpected " + describe_byte(c) + " at byte " + std::to_string(offset(pos)) +
             " after the end of the trace");
    }
    if (ok_ && !in_.io_error().empty()) fail("read error: " + in_.io_error());
    r.ok = ok_ && !stopped_error_;
    r.error = error_;
    r.events = index_;
    return r;
  }

 private:
  uint64_t offset(size_t pos) const { return in_.base() + pos; }

  void fail(const std::string& msg) {
    if (ok_) error_ = msg;
    ok_ = false;
  }

  // Skips whitespace; returns the next byte or -1 at the end of input.
  int peek(size_t& pos) {
    for (;;) {
      const char* d = in_.data();
      while (pos < in_.size() && is_ws(d[pos])) ++pos;
      if (pos < in_.size()) return static_cast<unsigned char>(d[pos]);
      if (!in_.refill(pos)) return -1;
    }
  }

  // The value starting at pos: returns its end (pos is moved if the buffer
  // was refilled), or 0 at a truncated end of file.
  size_t extent(size_t& pos) {
    for (;;) {
      size_t end = scan_value(in_.data(), pos, in_.size());
      if (end) return end;
      if (in_.size() - pos > kMaxValueBytes) {
        too_big_ = true;
        return 0;
      }
      if (!in_.refill(pos)) return 0;
    }
  }

  void report_progress() {
    if (opt_.progress && in_.consumed() - last_progress_ >= (uint64_t(64) << 20)) {
      last_progress_ = in_.consumed();
      opt_.progress(in_.consumed(), total_);
    }
  }

  void events(size_t& pos) {
    int c = peek(pos);
    if (c == ']') {
      ++pos;
      return;
    }
    for (;;) {
      if (c < 0) return fail("unexpected end of file after " + std::to_string(index_) +
                             " events (the event array is not closed)");
      if (c != '{')
        return fail("event #" + std::to_string(index_) + " at byte " + std::to_string(offset(pos)) +
                    " is not an object (found " + describe_byte(c) + ")");
      const uint64_t start = offset(pos);
      size_t end = extent(pos);
      if (!end && too_big_)
        return fail("event #" + std::to_string(index_) + " at byte " + std::to_string(start) + " is larger than " +
                    std::to_string(kMaxValueBytes >> 20) + " MiB: an unbalanced bracket or quote?");
      if (!end)
        return fail("unexpected end of file inside event #" + std::to_string(index_) + " (it starts at byte " +
                    std::to_string(start) + "): the file is truncated, or a bracket or quote is unbalanced");
      if (!parse_event(in_.data() + pos, end - pos, start)) return;
      pos = end;
      ++index_;
      report_progress();
      if (stopped_) return;
      c = peek(pos);
      if (c == ']') {
        ++pos;
        return;
      }
      if (c != ',')
        return fail("expected ',' or ']' after event #" + std::to_string(index_ - 1) + " at byte " +
                    std::to_string(offset(pos)) + ", found " + describe_byte(c) +
                    (c < 0 ? " (the event array is not closed)" : ""));
      ++pos;
      c = peek(pos);
    }
  }

  void object(size_t& pos) {
    bool found = false;
    int c = peek(pos);
    if (c == '}') return fail("the top-level object at byte 0 is empty: no \"traceEvents\" array");
    for (;;) {
      if (c != '"')
        return fail("expected a member name at byte " + std::to_string(offset(pos)) + ", found " +
                    describe_byte(c));
      size_t end = extent(pos);
      if (!end) return fail("unexpected end of file in a member name at byte " + std::to_string(offset(pos)));
      const bool is_events = std::string_view(in_.data() + pos, end - pos) == "\"traceEvents\"";
      if (std::string what; !check_syntax(in_.data() + pos, end - pos, offset(pos), &what))
        return fail("the member name at byte " + std::to_string(offset(pos)) + ": " + what);
      pos = end;
      if ((c = peek(pos)) != ':')
        return fail("expected ':' at byte " + std::to_string(offset(pos)) + ", found " + describe_byte(c));
      ++pos;
      c = peek(pos);
      if (c < 0) return fail("unexpected end of file at byte " + std::to_string(offset(pos)));
      if (is_events) {
        if (c != '[')
          return fail("\"traceEvents\" at byte " + std::to_string(offset(pos)) + " is not an array");
        found = true;
        ++pos;
        events(pos);
        if (!ok_ || stopped_) return;
      } else {
        const uint64_t start = offset(pos);
        size_t vend = extent(pos);
        if (!vend)
          return fail("unexpected end of file in the value starting at byte " + std::to_string(start));
        if (std::string what; !check_syntax(in_.data() + pos, vend - pos, start, &what))
          return fail("the value at byte " + std::to_string(start) + ": " + what);
        pos = vend;
      }
      c = peek(pos);
      if (c == '}') {
        ++pos;
        break;
      }
      if (c != ',')
        return fail("expected ',' or '}' at byte " + std::to_string(offset(pos)) + ", found " + describe_byte(c));
      ++pos;
      c = peek(pos);
    }
    if (!found)
      fail("the top-level object (bytes 0 to " + std::to_string(offset(pos)) + ") has no \"traceEvents\" array");
  }

  bool bad_event(uint64_t start, const std::string& what) {
    fail("event #" + std::to_string(index_) + " at byte " + std::to_string(start) + ": " + what);
    return false;
  }

  static bool read_int(od::value v, int64_t* out) {
    od::json_type t;
    if (v.type().get(t)) return false;
    if (t == od::json_type::number) {
      if (!v.get_int64().get(*out)) return true;
      double d;
      // Range first: converting an out-of-range double is undefined.
      if (v.get_double().get(d) || !(d >= -9.2e18 && d <= 9.2e18) || d != double(int64_t(d))) return false;
      *out = int64_t(d);
      return true;
    }
    if (t == od::json_type::string) {
      std::string_view s;
      if (v.get_string().get(s) || s.empty() || s.size() > 20) return false;
      Arg a{"", s, ValueKind::kString};
      return arg_as_int(a, out);
    }
    return false;
  }

  // Fills a->value and a->kind: strings unescaped when `unescape`, else
  // (and for every other kind) the raw JSON of the value.
  static simdjson::error_code value_of(od::value v, Arg* a, bool unescape) {
    od::json_type t;
    if (auto err = v.type().get(t)) return err;
    a->kind = kind_of(t);
    switch (t) {
      case od::json_type::object: {
        od::object o;
        if (auto err = v.get_object().get(o)) return err;
        return o.raw_json().get(a->value);
      }
      case od::json_type::array: {
        od::array arr;
        if (auto err = v.get_array().get(arr)) return err;
        return arr.raw_json().get(a->value);
      }
      case od::json_type::string: {
        std::string_view raw = trim(v.raw_json_token()), s;
        if (auto err = v.get_string().get(s)) return err;
        a->value = unescape ? s : raw;
        return simdjson::SUCCESS;
      }
      case od::json_type::number: {
        a->value = trim(v.raw_json_token());
        double d;
        return v.get_double().get(d);
      }
      case od::json_type::boolean: {
        a->value = trim(v.raw_json_token());
        bool b;
        return v.get_bool().get(b);
      }
      default: {
        a->value = trim(v.raw_json_token());
        bool is_null = false;
        if (auto err = v.is_null().get(is_null)) return err;
        return is_null ? simdjson::SUCCESS : simdjson::INCORRECT_TYPE;
      }
    }
  }

  // simdjson On-Demand checks only what it visits: a value it skips (an
  // array inside "args", say) is not validated. The DOM parser checks every
  // byte, UTF-8 included (`p` has the buffer's padding after `len`); what it
  // refuses goes through SyntaxCheck, which names the byte.
  bool check_syntax(const char* p, size_t len, uint64_t start, std::string* what) {
    simdjson::dom::element ignored;
    if (!dom_.parse(reinterpret_cast<const uint8_t*>(p), len, false).get(ignored)) return true;
    SyntaxCheck check(p, len);
    if (check.ok()) return true;
    *what = "invalid JSON at byte " + std::to_string(start + check.where()) + ": " + check.what();
    return false;
  }

  bool parse_event(const char* p, size_t len, uint64_t start) {
    if (std::string what; !check_syntax(p, len, start, &what)) return bad_event(start, what);
    Event& e = ev_;
    e = Event{};
    e.args.swap(args_buf_);
    e.extra.swap(extra_buf_);
    e.args.clear();
    e.extra.clear();
    e.index = index_;
    e.offset = start;
    e.text = std::string_view(p, len);
    od::document doc;
    auto err = parser_.iterate(p, len, len + simdjson::SIMDJSON_PADDING).get(doc);
    od::object obj;
    if (!err) err = doc.get_object().get(obj);
    if (err) return bad_event(start, std::string("invalid JSON: ") + simdjson::error_message(err));
    for (auto field : obj) {
      std::string_view key;
      od::value v;
      if ((err = field.unescaped_key().get(key)) || (err = field.value().get(v))) break;
      if (key == "cat" || key == "name" || key == "ph") {
        std::string_view s;
        if ((err = v.get_string().get(s))) {
          if (err == simdjson::INCORRECT_TYPE) return bad_event(start, "\"" + std::string(key) + "\" is not a string");
          break;
        }
        if (key == "cat") e.cat = s, e.has_cat = true;
        else if (key == "name") e.name = s, e.has_name = true;
        else e.ph = s, e.has_ph = true;
      } else if (key == "pid" || key == "tid") {
        int64_t x;
        if (!read_int(v, &x)) return bad_event(start, "\"" + std::string(key) + "\" is not an integer");
        if (key == "pid") e.pid = x, e.has_pid = true;
        else e.tid = x, e.has_tid = true;
      } else if (key == "ts" || key == "dur") {
        std::string_view raw = trim(v.raw_json_token());
        double x;
        if ((err = v.get_double().get(x))) {
          if (err == simdjson::INCORRECT_TYPE) return bad_event(start, "\"" + std::string(key) + "\" is not a number");
          break;
        }
        if (key == "ts") e.ts = x, e.ts_raw = raw, e.has_ts = true;
        else e.dur = x, e.dur_raw = raw, e.has_dur = true;
      } else if (key == "args") {
        od::json_type t;
        if ((err = v.type().get(t))) break;
        if (t != od::json_type::object) {
          Arg a{key, {}, ValueKind::kNull};
          if ((err = value_of(v, &a, false))) break;
          e.extra.push_back(a);
          continue;
        }
        e.has_args = true;
        od::object ao;
        if ((err = v.get_object().get(ao))) break;
        for (auto af : ao) {
          Arg a;
          od::value av;
          if ((err = af.unescaped_key().get(a.key)) || (err = af.value().get(av))) break;
          if ((err = value_of(av, &a, true))) break;
          e.args.push_back(a);
        }
        if (err) break;
      } else {
        Arg a{key, {}, ValueKind::kNull};
        if ((err = value_of(v, &a, false))) break;
        if (key == "id") e.id = a.value;
        e.extra.push_back(a);
      }
    }
    // Nothing can follow the object: the scanner ended the text at its brace.
    if (err) return bad_event(start, std::string("invalid JSON: ") + simdjson::error_message(err));
    std::string cb_error;
    const bool go_on = cb_(e, &cb_error);
    args_buf_.swap(e.args);
    extra_buf_.swap(e.extra);
    if (!cb_error.empty()) {
      stopped_error_ = true;
      return bad_event(start, cb_error);
    }
    if (!go_on) stopped_ = true;
    return true;
  }

  Input& in_;
  const EventCallback& cb_;
  const ReadOptions& opt_;
  uint64_t total_;
  od::parser parser_;
  simdjson::dom::parser dom_;
  Event ev_;
  std::vector<Arg> args_buf_, extra_buf_;
  uint64_t index_ = 0;
  uint64_t last_progress_ = 0;
  bool too_big_ = false;
  bool ok_ = true;
  bool stopped_ = false;
  bool stopped_error_ = false;
  std::string error_;
};

}  // namespace

ReadResult read_trace_buffer(std::string_view data, const EventCallback& callback, const ReadOptions& options) {
  Input in(-1, data, std::min(options.chunk_bytes, std::max<size_t>(data.size(), 1)));
  Reader r(in, callback, options, data.size());
  return r.run();
}

ReadResult read_trace_file(const std::string& path, const EventCallback& callback, const ReadOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ReadResult r;
    r.ok = false;
    r.error = "cannot open '" + path + "': " + std::strerror(errno);
    return r;
  }
  struct stat st {};
  uint64_t total = 0;
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      ReadResult r;
      r.ok = false;
      r.error = "'" + path + "' is a directory";
      return r;
    }
    total = uint64_t(st.st_size);
    char head[16];
    if (S_ISREG(st.st_mode) && ::pread(fd, head, sizeof head, 0) == ssize_t(sizeof head) &&
        is_sqlite_header(std::string_view(head, sizeof head))) {
      ::close(fd);
      return read_trace_db(path, callback, options);
    }
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  Input in(fd, {}, options.chunk_bytes);
  Reader reader(in, callback, options, total);
  ReadResult r = reader.run();
  ::close(fd);
  if (!r.ok) r.error = path + ": " + r.error;
  return r;
}

}  // namespace epprof::report
