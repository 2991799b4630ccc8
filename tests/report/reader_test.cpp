// The streaming reader: both JSON shapes, events across chunk boundaries,
// and bad input of every kind (clear error, byte offset or event index).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/reader.h"
#include "report/trace_model.h"
#include "report/validate.h"

namespace epprof::report {
namespace {

std::vector<std::string> names(std::string_view data, ReadResult* res, size_t chunk = 4096) {
  std::vector<std::string> out;
  ReadOptions o;
  o.chunk_bytes = chunk;
  *res = read_trace_buffer(data, [&](const Event& e, std::string*) {
    out.emplace_back(e.name);
    return true;
  }, o);
  return out;
}

TEST(Reader, BareArrayAndObjectShapeGiveTheSameEvents) {
  const std::string ev = R"({"cat":"Node","name":"a\"b","pid":1,"tid":2,"ts":1.5,"dur":2,"ph":"X","args":{"op_name":"Conv"}})";
  ReadResult r1, r2;
  auto a = names("[" + ev + "," + ev + "]", &r1);
  auto b = names(R"({"displayTimeUnit":"ns","traceEvents":[)" + ev + "," + ev + R"(],"otherData":{"x":[1,{"y":"]"}]}})", &r2);
  ASSERT_TRUE(r1.ok) << r1.error;
  ASSERT_TRUE(r2.ok) << r2.error;
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], "a\"b");
}

TEST(Reader, EventFieldsAndArgKinds) {
  const std::string t = R"([{"cat":"Kernel","name":"k","pid":"7","tid":3,"ts":10.25,"dur":1e1,"ph":"X","id":5,
    "args":{"s":"x\\y","n":42,"b":true,"z":null,"o":{"k":[1]},"a":[{"float":[1,2]}]}}])";
  ReadResult r;
  Event got;
  std::vector<Arg> args;
  r = read_trace_buffer(t, [&](const Event& e, std::string*) {
    got.pid = e.pid, got.tid = e.tid, got.ts = e.ts, got.dur = e.dur;
    args = e.args;
    EXPECT_EQ(e.arg("s")->value, "x\\y");
    EXPECT_EQ(e.arg("s")->kind, ValueKind::kString);
    EXPECT_EQ(e.arg("n")->value, "42");
    EXPECT_EQ(e.arg("n")->kind, ValueKind::kNumber);
    EXPECT_EQ(e.arg("b")->kind, ValueKind::kBool);
    EXPECT_EQ(e.arg("z")->kind, ValueKind::kNull);
    EXPECT_EQ(e.arg("o")->value, R"({"k":[1]})");
    EXPECT_EQ(e.arg("a")->value, R"([{"float":[1,2]}])");
    EXPECT_EQ(e.id, "5");
    return true;
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(got.pid, 7);
  EXPECT_EQ(got.tid, 3);
  EXPECT_DOUBLE_EQ(got.ts, 10.25);
  EXPECT_DOUBLE_EQ(got.dur, 10.0);
  EXPECT_EQ(args.size(), 6u);
}

TEST(Reader, EventsAcrossChunkBoundaries) {
  // Many events of varying size, strings with escaped quotes and brackets,
  // read with the smallest chunk: every event crosses a boundary somewhere.
  std::string t = "[\n";
  std::vector<std::string> want;
  for (int i = 0; i < 3000; ++i) {
    std::string name = "n" + std::to_string(i) + std::string(size_t(i % 97), 'x') + "\\\"]}{";
    want.push_back("n" + std::to_string(i) + std::string(size_t(i % 97), 'x') + "\"]}{");
    if (i) t += ",\n";
    t += R"({"cat":"Node","name":")" + name + R"(","pid":1,"tid":1,"ts":)" + std::to_string(i) +
         R"(,"dur":1,"ph":"X","args":{"k":"\\"}})";
  }
  t += "\n]\n";
  ReadResult r;
  auto got = names(t, &r, 4096);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(got, want);
  EXPECT_EQ(r.events, 3000u);
}

struct BadCase {
  const char* label;
  std::string data;
  const char* expect;  // substring of the error
};

TEST(Reader, BadInputGivesAClearError) {
  const std::string ok_ev = R"({"cat":"Node","name":"a","pid":1,"tid":1,"ts":0,"dur":1,"ph":"X","args":{}})";
  const std::vector<BadCase> cases = {
      {"empty", "", "empty"},
      {"whitespace", "  \n ", "whitespace"},
      {"binary", std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10), "not a trace"},
      {"truncated", "[" + ok_ev + "," + ok_ev.substr(0, 30), "truncated"},
      {"unclosed array", "[" + ok_ev, "not closed"},
      {"invalid json in event", "[" + ok_ev + R"(,{"cat":"Node","name":tru})" + "]", "event #1"},
      {"not an object", "[" + ok_ev + ",42]", "event #1"},
      {"missing comma", "[" + ok_ev + " " + ok_ev + "]", "expected ','"},
      {"trailing garbage", "[" + ok_ev + "] x", "after the end"},
      {"object without traceEvents", R"({"a":1})", "traceEvents"},
      {"traceEvents not an array", R"({"traceEvents":{}})", "not an array"},
      {"pid not integer", R"([{"cat":"a","name":"b","ph":"X","pid":1.5}])", "pid"},
      // Regression (fuzzer): a pid beyond int64 was converted with UB.
      {"pid out of range", R"([{"cat":"a","name":"b","ph":"X","pid":3333333333333333333333333333333331}])", "pid"},
      {"ts not a number", R"([{"cat":"a","name":"b","ph":"X","ts":"x"}])", "ts"},
      {"bad utf-8", "[{\"cat\":\"a\",\"name\":\"\xff\xfe\",\"ph\":\"i\"}]", "event #0"},
  };
  for (const BadCase& c : cases) {
    ReadResult r;
    names(c.data, &r);
    EXPECT_FALSE(r.ok) << c.label;
    EXPECT_NE(r.error.find(c.expect), std::string::npos) << c.label << ": " << r.error;
    if (std::string(c.label) != "empty" && std::string(c.label) != "whitespace") {
      EXPECT_TRUE(r.error.find("byte") != std::string::npos || r.error.find("event") != std::string::npos)
          << c.label << ": " << r.error;
    }
  }
}

TEST(Reader, ErrorNamesTheByteOffsetOfTheBadEvent) {
  const std::string ev = R"({"cat":"Node","name":"a","pid":1,"tid":1,"ts":0,"dur":1,"ph":"X","args":{}})";
  const std::string t = "[" + ev + "," + R"({"cat":"Node","name":"a","pid":[]})" + "]";
  ReadResult r;
  names(t, &r);
  ASSERT_FALSE(r.ok);
  const size_t at = 1 + ev.size() + 1;
  EXPECT_NE(r.error.find("event #1 at byte " + std::to_string(at)), std::string::npos) << r.error;
}

TEST(Reader, MissingRequiredFieldsFailTheLoad) {
  Trace t;
  std::string err;
  EXPECT_FALSE(load_trace_buffer(R"([{"cat":"Node","name":"a","pid":1,"tid":1,"dur":1,"ph":"X"}])", {}, &t, &err));
  EXPECT_NE(err.find("\"ts\""), std::string::npos) << err;
  EXPECT_NE(err.find("event #0"), std::string::npos) << err;
  Trace t2;
  EXPECT_FALSE(load_trace_buffer(R"([{"cat":"Node","pid":1}])", {}, &t2, &err));
  EXPECT_NE(err.find("ph"), std::string::npos) << err;
}

TEST(TraceModel, SkipAndMaxRunsChooseTheMeasuredRuns) {
  // Five model_runs of one process, 10 µs apart.
  std::string data = "[";
  for (int i = 0; i < 5; ++i)
    data += std::string(i ? "," : "") + R"({"cat":"Session","name":"model_run","pid":1,"tid":1,"ts":)" +
            std::to_string(i * 10) + R"(,"dur":5,"ph":"X","args":{}})";
  data += "]";
  auto measured = [&](int skip, int max) {
    LoadOptions o;
    o.skip_runs = skip;
    o.max_runs = max;
    Trace t;
    std::string err;
    EXPECT_TRUE(load_trace_buffer(data, o, &t, &err)) << err;
    std::vector<int> out;
    for (const report::Run& r : t.runs)
      if (r.measured) out.push_back(int(r.slice.ts) / 10);
    return out;
  };
  EXPECT_EQ(measured(0, -1), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(measured(1, -1), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(measured(1, 2), (std::vector<int>{1, 2}));
  EXPECT_EQ(measured(4, 3), (std::vector<int>{4}));
}

// Issue 15, item 6: simdjson On-Demand skipped values it did not visit, so
// corruption inside "args" (or any value the reader keeps raw) was read as
// valid. Every byte is now checked.
TEST(Reader, MalformedJsonAnywhereInAnEventIsAnError) {
  const std::string head = R"([{"cat":"Session","name":"ok","ph":"X","pid":1,"tid":1,"ts":0,"dur":1},)";
  const std::vector<std::string> bad = {
      R"({"cat":"Node","name":"n","ph":"X","args":{"input_type_shape":[{"float">[32]}]}})",
      R"({"cat":"Node","name":"n","ph":"X","args":{"x":{"a":1,}}})",
      R"({"cat":"Node","name":"n","ph":"X","args":{"x":[1 2]}})",
      R"({"cat":"Node","name":"n","ph":"X","extra":{"a":tru}})",
      R"({"cat":"Node","name":"n","ph":"X","args":{"x":"bad utf8 )" "\xff" R"("}})",
      R"({"cat":"Node","name":"n","ph":"X","args":{"x":"ctl )" "\x01" R"("}})",
  };
  for (const std::string& ev : bad) {
    ReadResult r;
    names(head + ev + "]", &r);
    EXPECT_FALSE(r.ok) << ev;
    EXPECT_NE(r.error.find("event #1 at byte " + std::to_string(head.size())), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("invalid JSON"), std::string::npos) << r.error;
  }
  // A value the object form skips is checked too.
  ReadResult r;
  names(R"({"otherData":{"x":[1,]},"traceEvents":[]})", &r);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("at byte 13"), std::string::npos) << r.error;
}

// Issue 15, item 7: slices of one track that overlap without nesting.
TEST(Validate, PartialOverlapOnOneTrackIsAViolation) {
  auto x = [](const char* name, int tid, const char* ts, const char* dur) {
    return std::string(R"({"cat":"Kernel","name":")") + name + R"(","ph":"X","pid":1,"tid":)" + std::to_string(tid) +
           R"(,"ts":)" + ts + R"(,"dur":)" + dur + R"(,"args":{}})";
  };
  // Written out of time order (as ONNX Runtime writes): still found.
  ValidateResult r = validate_trace_buffer("[" + x("b", 0, "15", "10") + "," + x("a", 0, "10", "10") + "]");
  EXPECT_EQ(r.counts["overlap"], 1u);
  // Nested, adjacent, equal, on other tracks, or within integer rounding: fine.
  r = validate_trace_buffer("[" + x("p", 0, "10", "10") + "," + x("c", 0, "12", "3") + "," + x("d", 0, "20", "5") +
                            "," + x("e", 0, "20", "5") + "," + x("f", 1, "11", "30") + "," + x("g", 0, "24", "2") +
                            "]");
  EXPECT_EQ(r.counts.count("overlap"), 0u) << (r.violations.empty() ? "" : r.violations[0].message);
  // Fractional microseconds get no rounding slack.
  r = validate_trace_buffer("[" + x("a", 0, "10.0", "10.0") + "," + x("b", 0, "19.5", "1.0") + "]");
  EXPECT_EQ(r.counts["overlap"], 1u);
}

// Issue 15, item 7: `epprof demo`'s trace failed validate with "nesting"
// violations: a node was checked only against the 8 runs that started last,
// and a preempted thread's run started longer ago than that.
TEST(Validate, ANodeInsideALongRunStartedBeforeManyOthersNests) {
  auto x = [](const char* cat, const char* name, int tid, int ts, int dur) {
    return std::string(R"({"cat":")") + cat + R"(","name":")" + name + R"(","ph":"X","pid":1,"tid":)" +
           std::to_string(tid) + R"(,"ts":)" + std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) +
           R"(,"args":{}})";
  };
  std::string t = "[" + x("Session", "model_run", 0, 0, 1000);  // the preempted thread's run
  for (int i = 0; i < 20; ++i) t += "," + x("Session", "model_run", 1, 10 + 10 * i, 5);
  t += "," + x("Node", "late node", 0, 900, 50) + "]";
  const ValidateResult r = validate_trace_buffer(t);
  EXPECT_EQ(r.total(), 0u) << (r.violations.empty() ? "" : r.violations[0].message);
}

TEST(Reader, MissingFileIsAnError) {
  ReadResult r = read_trace_file("/nonexistent/trace.json", [](const Event&, std::string*) { return true; });
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace epprof::report
