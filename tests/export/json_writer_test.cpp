// JsonWriter: output is checked with simdjson's DOM parser (an independent
// parser that also rejects invalid UTF-8) against a reference sanitiser
// written differently from the writer's decoder.
#include "export/json_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <simdjson.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace epprof::exporter {
namespace {

// ---- reference UTF-8 sanitiser --------------------------------------------
//
// Replaces each maximal invalid subpart with U+FFFD (Unicode §3.9). Unlike
// the writer, which uses the byte-range table, this one works on code point
// intervals: a prefix of an n-byte sequence is a valid start iff the code
// points reachable by completing it intersect [min for n, U+10FFFF] minus the
// surrogates.
bool prefix_can_complete(uint32_t prefix_bits, int have, int total) {
  static const uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  const int missing_bits = 6 * (total - have);
  uint64_t lo = uint64_t(prefix_bits) << missing_bits;
  uint64_t hi = lo + ((uint64_t(1) << missing_bits) - 1);
  lo = std::max<uint64_t>(lo, kMinForLength[total]);
  hi = std::min<uint64_t>(hi, 0x10FFFF);
  if (lo > hi) return false;
  return !(lo >= 0xD800 && hi <= 0xDFFF);
}

std::string reference_sanitize(std::string_view in, bool* was_valid = nullptr) {
  std::string out;
  bool valid = true;
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      out += char(c);
      ++i;
      continue;
    }
    int total = 0;
    uint32_t bits = 0;
    if ((c & 0xE0) == 0xC0) total = 2, bits = c & 0x1F;
    if ((c & 0xF0) == 0xE0) total = 3, bits = c & 0x0F;
    if ((c & 0xF8) == 0xF0) total = 4, bits = c & 0x07;
    int have = 1;
    if (total != 0 && prefix_can_complete(bits, 1, total)) {
      while (have < total && i + size_t(have) < in.size()) {
        const auto next = static_cast<unsigned char>(in[i + size_t(have)]);
        if ((next & 0xC0) != 0x80) break;
        const uint32_t more = (bits << 6) | (next & 0x3F);
        if (!prefix_can_complete(more, have + 1, total)) break;
        bits = more;
        ++have;
      }
    }
    if (total != 0 && have == total) {
      out.append(in.substr(i, size_t(total)));
    } else {
      out += "\xEF\xBF\xBD";
      valid = false;
    }
    i += size_t(have);
  }
  if (was_valid) *was_valid = valid;
  return out;
}

// ---- helpers ---------------------------------------------------------------

using epprof::testing::TempFile;

// Runs body against a writer on a fresh file; returns the flushed contents.
std::string write_to_string(const std::function<void(JsonWriter&)>& body,
                            size_t buffer_size = JsonWriter::kDefaultBufferSize) {
  TempFile file;
  JsonWriter w(file.fd, buffer_size);
  body(w);
  EXPECT_TRUE(w.flush()) << w.error();
  EXPECT_TRUE(w.ok());
  std::string text = file.contents();
  EXPECT_EQ(w.bytes_written(), text.size());
  return text;
}

std::string string_json(std::string_view s) {
  return write_to_string([&](JsonWriter& w) { w.string(s); });
}

// Writes [{k0:v0},{k1:v1},...], parses it and checks every key and value.
void round_trip_objects(const std::vector<std::string>& keys, const std::vector<std::string>& values,
                        size_t buffer_size) {
  ASSERT_EQ(keys.size(), values.size());
  const std::string text = write_to_string(
      [&](JsonWriter& w) {
        w.raw('[');
        for (size_t i = 0; i < keys.size(); ++i) {
          if (i) w.raw(",\n");
          w.raw('{');
          w.string(keys[i]);
          w.raw(':');
          w.string(values[i]);
          w.raw('}');
        }
        w.raw(']');
      },
      buffer_size);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const auto err = parser.parse(simdjson::padded_string(text)).get(doc);
  ASSERT_EQ(err, simdjson::SUCCESS) << simdjson::error_message(err);
  simdjson::dom::array array;
  ASSERT_EQ(doc.get_array().get(array), simdjson::SUCCESS);
  ASSERT_EQ(array.size(), keys.size());
  size_t i = 0;
  for (simdjson::dom::element item : array) {
    simdjson::dom::object obj;
    ASSERT_EQ(item.get_object().get(obj), simdjson::SUCCESS);
    ASSERT_EQ(obj.size(), 1u);
    for (simdjson::dom::key_value_pair field : obj) {
      std::string_view value;
      ASSERT_EQ(field.value.get_string().get(value), simdjson::SUCCESS);
      bool key_valid = false, value_valid = false;
      const std::string want_key = reference_sanitize(keys[i], &key_valid);
      const std::string want_value = reference_sanitize(values[i], &value_valid);
      // A mismatch on a 1 MB string would print 1 MB; compare as bool first.
      EXPECT_TRUE(field.key == want_key) << "key " << i << " size " << keys[i].size();
      EXPECT_TRUE(value == want_value) << "value " << i << " size " << values[i].size();
      if (key_valid) {
        EXPECT_TRUE(field.key == keys[i]) << "valid key " << i << " not exact";
      }
      if (value_valid) {
        EXPECT_TRUE(value == values[i]) << "valid value " << i << " not exact";
      }
    }
    ++i;
  }
}

const std::string kFffd = "\xEF\xBF\xBD";

// ---- reference self-check --------------------------------------------------

TEST(JsonWriterReference, MatchesUnicodeMaximalSubpartExamples) {
  // Unicode 15 §3.9, Table 3-8 and the surrounding examples.
  EXPECT_EQ(reference_sanitize("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
  EXPECT_EQ(reference_sanitize("\xC0\xAF"), kFffd + kFffd);              // overlong
  EXPECT_EQ(reference_sanitize("\xE0\x80\xAF"), kFffd + kFffd + kFffd);  // overlong
  EXPECT_EQ(reference_sanitize("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(reference_sanitize("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(reference_sanitize("\xF0\x9F\x98"), kFffd);  // truncated 4-byte
  EXPECT_EQ(reference_sanitize("\xE2\x82"), kFffd);      // truncated 3-byte
  EXPECT_EQ(reference_sanitize("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  bool valid = false;
  reference_sanitize("\xF4\x8F\xBF\xBF", &valid);  // U+10FFFF
  EXPECT_TRUE(valid);
}

// ---- string() ---------------------------------------------------------------

TEST(JsonWriterString, ExactEscapes) {
  EXPECT_EQ(string_json(""), "\"\"");
  EXPECT_EQ(string_json(std::string_view()), "\"\"");
  EXPECT_EQ(write_to_string([](JsonWriter& w) { w.raw(std::string_view()); }), "");
  EXPECT_EQ(string_json("abc"), "\"abc\"");
  EXPECT_EQ(string_json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(string_json("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(string_json(std::string_view("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(string_json("/"), "\"/\"");
  EXPECT_EQ(string_json("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  EXPECT_EQ(string_json("a\x80" "b"), "\"a" + kFffd + "b\"");
  EXPECT_EQ(string_json("\xC3"), "\"" + kFffd + "\"");
  EXPECT_EQ(string_json("\xED\xA0\x80\n"), "\"" + kFffd + kFffd + kFffd + "\\n\"");
}

std::vector<std::string> hostile_strings() {
  std::vector<std::string> v = {
      "",
      "\"",
      "\\",
      "\"\\\"\\\\",
      "plain_name",
      "a\"b\\c/d",
      "\xC3\xA9",                      // 2-byte
      "\xE2\x82\xAC",                  // 3-byte
      "\xF0\x9F\x98\x80",              // 4-byte
      "\xEF\xBF\xBF\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF",  // U+FFFF, D7FF, E000, 10FFFF
      "na\xC3\xAFve caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\n\"q\"",
      "\x80",                          // lone continuation bytes
      "a\xBF" "b\x80\x80",
      "\xC3",                          // truncated at end of string
      "ab\xE2\x82",
      "x\xF0\x9F\x98",
      "\xC0\xAF",                      // overlongs
      "\xC1\xBF",
      "\xE0\x80\xAF",
      "\xF0\x80\x80\xAF",
      "\xED\xA0\x80",                  // encoded surrogates
      "\xED\xBF\xBF\xED\xA0\xBD\xED\xB8\x80",
      "\xF4\x90\x80\x80",              // > U+10FFFF
      "\xF5", "\xF8\x88\x80\x80\x80", "\xFC\x84\x80\x80\x80\x80", "\xFE", "\xFF", "\xFE\xFF",
      "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
      std::string("\x80\"\x01\xC3\xA9\xC3", 7),  // invalid mixed with escapes
      std::string("\x00", 1),
      std::string("a\x00" "b", 3),
  };
  for (int c = 0; c < 0x20; ++c) {
    v.push_back(std::string(1, char(c)));
    v.push_back("x" + std::string(1, char(c)) + "y");
  }
  v.push_back("\x7F");
  v.push_back("del\x7F" "del");
  // Large strings, bigger than the buffer: plain ASCII, mixed valid UTF-8
  // with escapes, and mixed with invalid bytes scattered through it.
  v.push_back(std::string(1536 * 1024, 'n'));
  std::string mixed, broken;
  while (mixed.size() < (1u << 20)) {
    mixed += "node_\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"\\\n\x01/";
    broken += "node_\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"\\\n\x01/\xC3\xED\xA0\x80\xFF";
  }
  v.push_back(mixed);
  v.push_back(broken);
  return v;
}

TEST(JsonWriterString, HostileRoundTrip) {
  const std::vector<std::string> keys = hostile_strings();
  std::vector<std::string> values(keys.rbegin(), keys.rend());
  // Default buffer, and a tiny one so escapes and runs straddle every flush.
  round_trip_objects(keys, values, JsonWriter::kDefaultBufferSize);
  round_trip_objects(keys, values, JsonWriter::kMinBufferSize);
  round_trip_objects(keys, values, 1000);
}

TEST(JsonWriterString, RandomBytesAlwaysGiveValidJson) {
  std::mt19937_64 rng(20240611);
  auto pick = [&](uint64_t n) { return uint64_t(rng() % n); };
  auto encode = [](uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  };
  std::vector<std::string> keys, values;
  size_t valid_count = 0;
  for (int n = 0; n < 10000; ++n) {
    // Half the strings use only well-formed pieces so many are valid UTF-8.
    const bool arbitrary = n % 2 == 1;
    std::string s;
    const uint64_t pieces = pick(24);
    for (uint64_t p = 0; p < pieces; ++p) {
      switch (pick(arbitrary ? 6 : 4)) {
        case 0: s += char(0x20 + pick(0x5F)); break;           // printable ASCII
        case 1: s += "\"\\\x7F"[pick(3)]; break;               // escaped ASCII
        case 2: s += char(pick(0x20)); break;                  // control
        case 3: {                                              // any scalar value
          uint32_t cp;
          do cp = uint32_t(pick(0x110000)); while (cp >= 0xD800 && cp <= 0xDFFF);
          if (pick(2)) cp &= 0xFFFF;  // favour 2- and 3-byte forms
          if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE9;
          encode(cp, s);
          break;
        }
        case 4: s += char(0x80 + pick(0x80)); break;           // high byte
        default: s += char(pick(256)); break;                  // any byte
      }
    }
    bool valid = false;
    reference_sanitize(s, &valid);
    ASSERT_EQ(valid, simdjson::validate_utf8(s)) << "reference disagrees with simdjson at " << n;
    valid_count += valid;
    (n % 2 ? values : keys).push_back(std::move(s));
  }
  EXPECT_GT(valid_count, 3000u);  // both kinds really were exercised
  EXPECT_LT(valid_count, 9000u);
  round_trip_objects(keys, values, JsonWriter::kDefaultBufferSize);
  round_trip_objects(keys, values, JsonWriter::kMinBufferSize);
}

// ---- numbers -----------------------------------------------------------------

TEST(JsonWriterNumbers, Integers) {
  EXPECT_EQ(write_to_string([](JsonWriter& w) {
              w.u64(0);
              w.raw(',');
              w.u64(UINT64_MAX);
              w.raw(',');
              w.i64(-1);
              w.raw(',');
              w.i64(INT64_MIN);
              w.raw(',');
              w.i64(INT64_MAX);
            }),
            "0,18446744073709551615,-1,-9223372036854775808,9223372036854775807");
}

// ns / 1000 as a decimal, built by string surgery on the decimal digits of ns
// (independent of the writer's arithmetic).
std::string reference_micros(int64_t ns) {
  std::string digits = std::to_string(ns);
  const bool negative = digits[0] == '-';
  if (negative) digits.erase(0, 1);
  if (digits.size() < 4) digits.insert(0, 4 - digits.size(), '0');
  std::string whole = digits.substr(0, digits.size() - 3);
  std::string frac = digits.substr(digits.size() - 3);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  std::string out = (negative ? "-" : "") + whole;
  if (!frac.empty()) out += "." + frac;
  return out;
}

std::string micros_json(int64_t ns, bool integer) {
  return write_to_string([&](JsonWriter& w) { w.micros(ns, integer); });
}

// Every fraction of a microsecond, either sign, against the string surgery.
TEST(JsonWriterNumbers, MicrosEveryFraction) {
  for (int64_t whole : {int64_t(0), int64_t(7), int64_t(123456789)})
    for (int64_t f = 0; f < 1000; ++f)
      for (int64_t sign : {1, -1}) {
        const int64_t ns = sign * (whole * 1000 + f);
        ASSERT_EQ(micros_json(ns, false), reference_micros(ns)) << ns;
      }
}

TEST(JsonWriterNumbers, MicrosTable) {
  struct Case {
    int64_t ns;
    const char* integer;
    const char* fractional;
  };
  const Case cases[] = {
      {0, "0", "0"},
      {1, "0", "0.001"},
      {999, "0", "0.999"},
      {1000, "1", "1"},
      {1001, "1", "1.001"},
      {1010, "1", "1.01"},
      {1100, "1", "1.1"},
      {1999, "1", "1.999"},
      {1234567, "1234", "1234.567"},
      {1234500, "1234", "1234.5"},
      {1234000, "1234", "1234"},
      {-1, "0", "-0.001"},
      {-500, "0", "-0.5"},
      {-1000, "-1", "-1"},
      {-1999, "-1", "-1.999"},
      {-1234567, "-1234", "-1234.567"},
      {INT64_MAX, "9223372036854775", "9223372036854775.807"},
      {INT64_MIN, "-9223372036854775", "-9223372036854775.808"},
      {INT64_MIN + 192, "-9223372036854775", "-9223372036854775.616"},
  };
  simdjson::dom::parser parser;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.ns);
    const std::string integer = micros_json(c.ns, true);
    const std::string fractional = micros_json(c.ns, false);
    EXPECT_EQ(integer, c.integer);
    EXPECT_EQ(fractional, c.fractional);
    EXPECT_EQ(fractional, reference_micros(c.ns));

    // Both parse as JSON numbers: the integer one exactly, the fractional one
    // to the same double as the exact decimal text of ns/1000.
    int64_t parsed_int = 0;
    ASSERT_EQ(parser.parse(simdjson::padded_string(integer)).get_int64().get(parsed_int), simdjson::SUCCESS);
    EXPECT_EQ(parsed_int, c.ns / 1000);
    double parsed = 0;
    ASSERT_EQ(parser.parse(simdjson::padded_string(fractional)).get_double().get(parsed), simdjson::SUCCESS);
    EXPECT_EQ(parsed, std::strtod(reference_micros(c.ns).c_str(), nullptr));
  }
}

TEST(JsonWriterNumbers, MicrosRandomMatchesReference) {
  std::mt19937_64 rng(7);
  const std::string text = write_to_string([&](JsonWriter& w) {
    for (int i = 0; i < 20000; ++i) {
      const int64_t ns = int64_t(rng()) >> (rng() % 64);  // all magnitudes, both signs
      w.micros(ns, i % 2 == 0);
      w.raw(' ');
      w.raw(i % 2 == 0 ? std::to_string(ns / 1000) : reference_micros(ns));
      w.raw('\n');
    }
  });
  std::istringstream lines(text);
  std::string got, want;
  int count = 0;
  while (lines >> got >> want) {
    EXPECT_EQ(got, want);
    ++count;
  }
  EXPECT_EQ(count, 20000);
}

// ---- errors and I/O ---------------------------------------------------------

TEST(JsonWriterErrors, ClosedFd) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  close(fds[1]);  // fds[1] is now a closed descriptor
  JsonWriter w(fds[1]);
  w.raw("[1,2,3]");
  EXPECT_TRUE(w.ok());  // still buffered
  EXPECT_FALSE(w.flush());
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.error().find(std::strerror(EBADF)), std::string::npos) << w.error();
  // Later calls are ignored without crashing, including ones that would
  // normally take the slow paths.
  const uint64_t before = w.bytes_written();
  w.string(std::string(3 << 20, 'x'));
  w.string("\x80\n");
  w.u64(1);
  w.micros(1500, false);
  w.raw(std::string(2 << 20, ' '));
  EXPECT_FALSE(w.flush());
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(w.bytes_written(), before);
}

TEST(JsonWriterErrors, ReadOnlyFd) {
  TempFile file;
  const int ro = open(file.path.c_str(), O_RDONLY);
  ASSERT_GE(ro, 0);
  JsonWriter w(ro);
  w.string("event");
  EXPECT_FALSE(w.flush());
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.error().find(std::strerror(EBADF)), std::string::npos) << w.error();
  close(ro);
}

TEST(JsonWriterErrors, DevFullReportsNoSpace) {
  const int fd = open("/dev/full", O_WRONLY);
  if (fd < 0) GTEST_SKIP() << "/dev/full: " << std::strerror(errno);
  JsonWriter w(fd, 4096);
  // More than the buffer: the failure shows without an explicit flush.
  for (int i = 0; i < 1000 && w.ok(); ++i) w.string("kernel_time");
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.error().find(std::strerror(ENOSPC)), std::string::npos) << w.error();
  EXPECT_FALSE(w.flush());
  close(fd);
}

TEST(JsonWriterErrors, NoErrorTextWhileOk) {
  TempFile file;
  JsonWriter w(file.fd);
  w.raw("[]");
  EXPECT_TRUE(w.flush());
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE(w.error().empty());
}

void on_signal(int) {}

// A pipe whose writer is interrupted by signals (installed without
// SA_RESTART) while the reader drains slowly: write(2) returns EINTR or short
// counts, and every byte must still arrive once and in order.
TEST(JsonWriterIo, SurvivesEintrAndShortWrites) {
  struct sigaction sa {};
  struct sigaction old {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);

  std::string expected;
  for (int i = 0; expected.size() < (6u << 20); ++i) expected += "{\"n\":" + std::to_string(i) + "},";
  std::atomic<bool> done{false};
  bool ok = false;
  std::thread writer([&] {
    JsonWriter w(fds[1], 256 * 1024);
    w.raw(std::string_view(expected).substr(0, 1000));
    w.raw(std::string_view(expected).substr(1000));  // larger than the buffer: written directly
    ok = w.flush();
    close(fds[1]);
    done = true;
  });
  std::string got;
  char chunk[4096];
  for (;;) {
    if (!done) pthread_kill(writer.native_handle(), SIGUSR1);
    const ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(chunk, size_t(n));
  }
  writer.join();
  close(fds[0]);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_TRUE(ok);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected);
}

TEST(JsonWriterIo, BytesWrittenCountsBufferedOutput) {
  TempFile file;
  JsonWriter w(file.fd, 300);
  w.raw('[');
  EXPECT_EQ(w.bytes_written(), 1u);
  w.string("ab");
  w.u64(12345);
  EXPECT_EQ(w.bytes_written(), 1u + 4u + 5u);
  for (int i = 0; i < 1000; ++i) w.string("some name");
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(w.bytes_written(), file.contents().size());
}

TEST(JsonWriterIo, PaddedCopiesAndDirectFormattingCrossBufferEnds) {
  // A 256-byte buffer: a padded 128-byte copy or a reserved item finds too
  // little room every few writes and must flush first, losing nothing.
  char padded[128];
  for (size_t i = 0; i < sizeof padded; ++i) padded[i] = char('a' + i % 26);
  TempFile file;
  JsonWriter w(file.fd, JsonWriter::kMinBufferSize);
  std::string expected;
  for (size_t i = 0; i < 2000; ++i) {
    const size_t n = (i * 37) % (sizeof padded + 1);
    w.raw_padded<sizeof padded>(padded, n);
    expected.append(padded, n);
    if (i % 3 == 0) {
      const int64_t ns = int64_t(i) * 1001 - 777;
      if (char* p = w.reserve(JsonWriter::kMaxMicros + 24)) {
        p = JsonWriter::put(p, "|");
        p = JsonWriter::put_micros(p, ns);
        p = JsonWriter::put(p, "|");
        w.commit(JsonWriter::put_u64(p, UINT64_MAX - i));
      }
      expected += "|" + reference_micros(ns) + "|" + std::to_string(UINT64_MAX - i);
    }
  }
  ASSERT_TRUE(w.flush()) << w.error();
  EXPECT_EQ(w.bytes_written(), expected.size());
  EXPECT_TRUE(file.contents() == expected);
}

}  // namespace
}  // namespace epprof::exporter
