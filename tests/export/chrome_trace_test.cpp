// The Chrome trace sink: its integer microseconds (the default of `epprof
// run`, as ONNX Runtime writes them): both ends of a slice round to the
// nearest µs, so nesting survives and totals stay unbiased, and no slice
// with a length is written with none; and its cache of host events'
// opening text, which must never give an event another's name or thread.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdint>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/intern.h"
#include "core/record.h"
#include "epprof/event.h"
#include "export/chrome_trace.h"
#include "export/integer_us.h"
#include "support/test_util.h"

namespace epprof::exporter {
namespace {

TEST(ChromeTraceInteger, EndsRoundToTheNearestMicrosecond) {
  EXPECT_EQ(integer_slice(1499, 2000).ts, 1);
  EXPECT_EQ(integer_slice(1500, 2000).ts, 2);  // halves up
  EXPECT_EQ(integer_slice(1499, 2000).dur, 3 - 1);
  EXPECT_EQ(integer_slice(-1500, 1000).ts, -1);
  EXPECT_EQ(integer_slice(-1501, 1000).ts, -2);
  EXPECT_EQ(integer_slice(0, 0).dur, 0);  // an instant stays one
}

TEST(ChromeTraceInteger, ASliceUnderAMicrosecondKeepsOne) {
  for (int64_t ts : {0, 400, 499, 500, 999, 123456789})
    for (int64_t dur : {1, 120, 499, 999}) {
      const auto s = integer_slice(ts, dur);
      EXPECT_GE(s.dur, 1) << ts << "+" << dur;
      EXPECT_LE(s.dur, 1) << ts << "+" << dur;
    }
}

TEST(ChromeTraceInteger, NestingSurvivesRounding) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> start(0, 10'000'000), len(1, 200'000);
  for (int i = 0; i < 100000; ++i) {
    const int64_t pts = start(rng), pdur = len(rng);
    std::uniform_int_distribution<int64_t> in(pts, pts + pdur);
    int64_t a = in(rng), b = in(rng);
    if (a > b) std::swap(a, b);
    if (b - a < 1000) continue;  // a child of a µs or more: no 1 µs minimum to stretch it
    const auto p = integer_slice(pts, pdur), c = integer_slice(a, b - a);
    ASSERT_GE(c.ts, p.ts) << pts << "+" << pdur << " holds " << a << ".." << b;
    ASSERT_LE(c.ts + c.dur, p.ts + p.dur) << pts << "+" << pdur << " holds " << a << ".." << b;
  }
}

TEST(ChromeTraceInteger, TotalsStayUnbiased) {
  // 3 µs kernels at random offsets: truncating the length (ONNX Runtime's
  // way, and this sink's before) loses ~0.5 µs each; flooring the start and
  // ceiling the end adds ~1 µs.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> start(0, 1'000'000'000), len(2500, 3500);
  int64_t true_ns = 0, written_us = 0;
  for (int i = 0; i < 200000; ++i) {
    const int64_t ts = start(rng), dur = len(rng);
    true_ns += dur;
    written_us += integer_slice(ts, dur).dur;
  }
  EXPECT_NEAR(double(written_us) * 1000 / double(true_ns), 1.0, 0.002);
}

struct Written {
  std::string name, cat;
  int64_t tid;
  uint64_t correlation_id;
};

using epprof::testing::TempFile;

// The text the sink writes for host events `events`.
std::string write_events(const std::vector<HostEventOut>& events) {
  TempFile file;
  {
    ChromeTraceSink sink(file.fd, false);
    for (const HostEventOut& e : events) sink.host_event(e);
    std::string error;
    EXPECT_TRUE(sink.finish({}, &error)) << error;
  }
  return file.contents();
}

// The host events `events` as the sink writes them, parsed back.
std::vector<Written> write_and_parse(const std::vector<HostEventOut>& events) {
  const std::string text = write_events(events);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text.substr(0, 400);
  std::vector<Written> out;
  simdjson::dom::array items;
  if (doc.get_array().get(items) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element item : items) {
    Written w;
    w.name = std::string(std::string_view(item["name"]));
    w.cat = std::string(std::string_view(item["cat"]));
    w.tid = int64_t(item["tid"]);
    w.correlation_id = std::stoull(std::string(std::string_view(item["args"]["correlation_id"])));
    out.push_back(w);
  }
  return out;
}

TEST(ChromeTraceSink, EveryHostEventKeepsItsOwnNameCategoryAndThread) {
  // More (name, thread, category) keys than the cache has slots, each seen
  // several times in a shuffled order, and a name buffer whose text changes
  // in place (same address, same length): each event is written as given.
  const core::Record rec{};
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("node_" + std::to_string(i) + "_kernel_time");
  names.push_back("needs \"escaping\"\n");
  std::vector<HostEventOut> events;
  uint64_t id = 1;
  for (int round = 0; round < 3; ++round)
    for (const std::string& n : names)
      for (int64_t tid : {7, 8, 9, 100000})
        for (uint8_t cat : {uint8_t(EPPROF_CATEGORY_NODE), uint8_t(EPPROF_CATEGORY_SESSION)})
          events.push_back({cat, n, 42, tid, int64_t(id) * 1000, 500, id, &rec}), ++id;
  std::shuffle(events.begin(), events.end(), std::mt19937_64(3));
  std::string reused = "aaaa";
  std::vector<std::string> reused_texts;
  for (const char* t : {"aaaa", "bbbb", "aaaa"}) {
    reused.assign(t);
    reused_texts.push_back(reused);
  }
  const std::vector<Written> first = write_and_parse(events);
  ASSERT_EQ(first.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(first[i].name, std::string(events[i].name)) << i;
    EXPECT_EQ(first[i].cat, category_name(events[i].category)) << i;
    EXPECT_EQ(first[i].tid, events[i].tid) << i;
    EXPECT_EQ(first[i].correlation_id, events[i].correlation_id) << i;
  }

  // One buffer, rewritten between events: its address and length never change.
  std::string text;
  {
    TempFile file;
    ChromeTraceSink sink(file.fd, false);
    uint64_t n = 1;
    for (const std::string& t : reused_texts) {
      reused.assign(t);
      sink.host_event({EPPROF_CATEGORY_NODE, reused, 42, 7, 1000, 10, n++, &rec});
    }
    ASSERT_TRUE(sink.finish({}, nullptr));
    text = file.contents();
  }
  const size_t a = text.find("\"aaaa\""), b = text.find("\"bbbb\""), c = text.rfind("\"aaaa\"");
  EXPECT_NE(b, std::string::npos) << text;
  EXPECT_LT(a, b) << text;
  EXPECT_LT(b, c) << text;
}

TEST(ChromeTraceSink, EventsWithRecordsAreKeyedByTheirInternedNames) {
  // Records name their events by interned id, which the cache keys by: more
  // ids than slots, on several threads and categories, each still written
  // with its own name (a cache keyed by id alone, or by thread alone, fails).
  std::vector<core::Record> recs;
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) {
    names.push_back("interned_node_" + std::to_string(i) + "_kernel_time");
    core::Record r{};
    r.name = core::intern(names.back());
    recs.push_back(r);
  }
  std::vector<HostEventOut> events;
  uint64_t id = 1;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < recs.size(); ++i)
      for (int64_t tid : {7, 8})
        for (uint8_t cat : {uint8_t(EPPROF_CATEGORY_NODE), uint8_t(EPPROF_CATEGORY_KERNEL)})
          events.push_back({cat, names[i], 42, tid, int64_t(id) * 1000, 500, id, &recs[i]}), ++id;
  std::shuffle(events.begin(), events.end(), std::mt19937_64(5));
  const std::vector<Written> written = write_and_parse(events);
  ASSERT_EQ(written.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(written[i].name, std::string(events[i].name)) << i;
    EXPECT_EQ(written[i].cat, category_name(events[i].category)) << i;
    EXPECT_EQ(written[i].tid, events[i].tid) << i;
  }
}

TEST(ChromeTraceSink, TheShortFormOfAnEventWritesWhatTheGeneralOneDoes) {
  // An event with no args takes a short path (its head copied at a fixed
  // size, the rest formatted after one capacity check); an empty list of
  // extra args sends the same event the general way. Names around the size
  // of the fixed copy, times from negative to the largest: the two items
  // must be the same bytes.
  const core::Record rec{};
  const std::vector<ExtraArg> no_extras;
  std::vector<std::string> names;
  for (size_t len = 1; len < 140; len += 3) names.push_back(std::string(len, 'n'));
  names.push_back(std::string(70, 'n') + "\"\t\xC3\xA9");  // escaped and UTF-8
  const int64_t times[] = {0, 1, 999, 1000, 1001, -1, -1500, 123456789012, INT64_MAX, INT64_MIN};
  std::vector<HostEventOut> events;
  uint64_t id = 1;
  for (const std::string& n : names)
    for (size_t t = 0; t < std::size(times); ++t) {
      const int64_t ts = times[t], dur = times[(t + 3) % std::size(times)];
      const uint64_t cid = id++ * 0x9E3779B97F4A7C15ull;
      events.push_back({EPPROF_CATEGORY_NODE, n, 42, 7, ts, dur, cid, &rec});
      events.push_back({EPPROF_CATEGORY_NODE, n, 42, 7, ts, dur, cid, &rec, &no_extras});
    }
  const std::string text = write_events(events);
  std::vector<std::string> items;
  for (size_t at = 2; items.size() < events.size();) {  // after "[\n"; items end at ",\n" or "\n]"
    const size_t end = text.find("}}", at);
    ASSERT_NE(end, std::string::npos) << text.substr(at, 200);
    items.push_back(text.substr(at, end + 2 - at));
    at = end + 4;
  }
  ASSERT_EQ(items.size(), events.size());
  for (size_t i = 0; i < items.size(); i += 2) EXPECT_EQ(items[i], items[i + 1]) << i;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
  EXPECT_NE(text.find("\"ts\":-1.5,"), std::string::npos);
  EXPECT_NE(text.find("\"ts\":-9223372036854775.808,"), std::string::npos);
}

}  // namespace
}  // namespace epprof::exporter
