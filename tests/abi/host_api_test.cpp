// The host's event API as plugins see it: creation with validation,
// accessors, and the append-only sink with whole-batch validation.
#include <gtest/gtest.h>

#include <cctype>

#include "plugin/event.h"
#include "support/test_util.h"

namespace {

using epprof::testing::take;

const epprof_host_api* api() { return epprof_get_host_api(); }

epprof_event* make(const char* name = "k", size_t nargs = 0, const char* const* keys = nullptr,
                   const char* const* values = nullptr) {
  epprof_event* e = nullptr;
  auto r = take(api()->event_create(EPPROF_CATEGORY_KERNEL, name, 1, 2, 100, 50, 7, keys, values,
                                    nargs, &e));
  EXPECT_EQ(r.code, EPPROF_OK) << r.message;
  return e;
}

TEST(HostApi, TableIsCompleteAndVersioned) {
  ASSERT_NE(api(), nullptr);
  EXPECT_EQ(api()->abi_version, EPPROF_EP_ABI_VERSION);
  // Every slot of a version-1 table is set.
  const void* const* slots = reinterpret_cast<const void* const*>(&api()->status_create);
  const size_t n = (sizeof(epprof_host_api) - offsetof(epprof_host_api, status_create)) / sizeof(void*);
  for (size_t i = 0; i < n; ++i) EXPECT_NE(slots[i], nullptr) << "slot " << i;
}

TEST(HostApi, CreateAndReadBack) {
  const char* keys[] = {"queue", "grid"};
  const char* values[] = {"0", "[1,2,3]"};
  epprof_event* e = make("gemm", 2, keys, values);
  ASSERT_NE(e, nullptr);
  epprof_category cat;
  const char* name;
  int64_t ts, dur;
  uint64_t id;
  size_t n;
  const char *k, *v;
  EPPROF_EXPECT_OK(api()->event_get_category(e, &cat));
  EXPECT_EQ(cat, EPPROF_CATEGORY_KERNEL);
  EPPROF_EXPECT_OK(api()->event_get_name(e, &name));
  EXPECT_STREQ(name, "gemm");
  EPPROF_EXPECT_OK(api()->event_get_timing(e, &ts, &dur));
  EXPECT_EQ(ts, 100);
  EXPECT_EQ(dur, 50);
  EPPROF_EXPECT_OK(api()->event_get_correlation_id(e, &id));
  EXPECT_EQ(id, 7u);
  EPPROF_EXPECT_OK(api()->event_arg_count(e, &n));
  EXPECT_EQ(n, 2u);
  EPPROF_EXPECT_OK(api()->event_get_arg(e, 1, &k, &v));
  EXPECT_STREQ(k, "grid");
  EXPECT_STREQ(v, "[1,2,3]");
  EPPROF_EXPECT_OK(api()->event_find_arg(e, "queue", &v));
  EXPECT_STREQ(v, "0");
  EPPROF_EXPECT_OK(api()->event_find_arg(e, "missing", &v));
  EXPECT_EQ(v, nullptr);
  auto r = take(api()->event_get_arg(e, 2, &k, &v));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("out of range"), std::string::npos) << r.message;
  api()->event_release(e);
}

struct BadCreate {
  const char* label;
  epprof_category category;
  const char* name;
  int64_t dur;
  size_t nargs;
  bool null_keys, null_values, null_key, null_value, null_out;
  const char* expect;  // text the message must contain
};

class HostApiInvalid : public ::testing::TestWithParam<BadCreate> {};

TEST_P(HostApiInvalid, ReturnsInvalidArgumentAndLeavesOutUntouched) {
  const BadCreate& c = GetParam();
  const char* keys[] = {c.null_key ? nullptr : "k"};
  const char* values[] = {c.null_value ? nullptr : "v"};
  epprof_event* sentinel = reinterpret_cast<epprof_event*>(0x1234);
  epprof_event* e = sentinel;
  auto r = take(api()->event_create(c.category, c.name, 0, 0, 0, c.dur, 0,
                                    c.null_keys ? nullptr : keys, c.null_values ? nullptr : values,
                                    c.nargs, c.null_out ? nullptr : &e));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT) << c.label;
  EXPECT_NE(r.message.find(c.expect), std::string::npos) << c.label << ": " << r.message;
  EXPECT_EQ(e, sentinel) << c.label;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostApiInvalid,
    ::testing::Values(
        BadCreate{"null name", EPPROF_CATEGORY_KERNEL, nullptr, 0, 0, false, false, false, false, false, "name is NULL"},
        BadCreate{"unknown category", EPPROF_CATEGORY_COUNT_, "k", 0, 0, false, false, false, false, false, "unknown category 7"},
        BadCreate{"negative duration", EPPROF_CATEGORY_KERNEL, "k", -5, 0, false, false, false, false, false, "negative duration"},
        BadCreate{"null keys with count", EPPROF_CATEGORY_KERNEL, "k", 0, 1, true, false, false, false, false, "NULL with num_args = 1"},
        BadCreate{"null values with count", EPPROF_CATEGORY_KERNEL, "k", 0, 1, false, true, false, false, false, "NULL with num_args = 1"},
        BadCreate{"null key", EPPROF_CATEGORY_KERNEL, "k", 0, 1, false, false, true, false, false, "arg key 0 is NULL"},
        BadCreate{"null value", EPPROF_CATEGORY_KERNEL, "k", 0, 1, false, false, false, true, false, "value of arg 'k' is NULL"},
        BadCreate{"null out", EPPROF_CATEGORY_KERNEL, "k", 0, 0, false, false, false, false, true, "out is NULL"}),
    // Stable test names (ctest finds tests by name): the label, as an identifier.
    [](const ::testing::TestParamInfo<BadCreate>& param_info) {
      std::string n = param_info.param.label;
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(HostApi, NullArraysWithZeroCountAreFine) {
  epprof_event* e = nullptr;
  EPPROF_ASSERT_OK(api()->event_create(EPPROF_CATEGORY_API, "x", 0, 0, 0, 0, 0, nullptr, nullptr, 0, &e));
  api()->event_release(e);
}

TEST(HostApi, AccessorsRejectNull) {
  epprof_category cat;
  EXPECT_EQ(take(api()->event_get_category(nullptr, &cat)).code, EPPROF_INVALID_ARGUMENT);
  epprof_event* e = make();
  EXPECT_EQ(take(api()->event_get_name(e, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  api()->event_release(e);
}

TEST(Sink, BatchWithOneBadEventAppendsNothing) {
  epprof_event_sink sink;
  epprof_event* a = make("a");
  epprof_event* b = make("b");
  const epprof_event* batch[] = {a, nullptr, b};
  auto r = take(api()->sink_append(&sink, batch, 3));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("event 1 of 3 is NULL"), std::string::npos) << r.message;
  EXPECT_TRUE(sink.events.empty());
  const epprof_event* good[] = {a, b};
  EPPROF_EXPECT_OK(api()->sink_append(&sink, good, 2));
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[1].name, "b");
  // The sink copied: releasing the plugin's events leaves the copies intact.
  api()->event_release(a);
  api()->event_release(b);
  EXPECT_EQ(sink.events[0].name, "a");
}

TEST(Sink, EmptyBatchIsANoOp) {
  epprof_event_sink sink;
  EPPROF_EXPECT_OK(api()->sink_append(&sink, nullptr, 0));
  EXPECT_TRUE(sink.events.empty());
}

TEST(Sink, NullSinkAndNullArrayAreErrors) {
  epprof_event* a = make();
  const epprof_event* batch[] = {a};
  auto r = take(api()->sink_append(nullptr, batch, 1));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("sink is NULL"), std::string::npos);
  epprof_event_sink sink;
  r = take(api()->sink_append(&sink, nullptr, 2));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_TRUE(sink.events.empty());
  EXPECT_EQ(take(api()->sink_set_metadata(&sink, nullptr, "v")).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(api()->sink_set_track_name(&sink, 0, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  api()->event_release(a);
}

TEST(Status, CodesHaveNamesAndMessagesAreCopied) {
  std::string msg = "boom";
  epprof_status* s = epprof_status_create(EPPROF_IO_ERROR, msg.c_str());
  msg[0] = 'X';
  EXPECT_STREQ(epprof_status_get_message(s), "boom");
  EXPECT_EQ(epprof_status_get_code(s), EPPROF_IO_ERROR);
  epprof_status_release(s);
  EXPECT_EQ(epprof_status_create(EPPROF_OK, "ignored"), nullptr);
  EXPECT_STREQ(epprof_status_code_name(EPPROF_NOT_FOUND), "NOT_FOUND");
  EXPECT_STREQ(epprof_status_code_name(epprof_status_code(999)), "UNKNOWN");
  EXPECT_STREQ(epprof_status_get_message(nullptr), "");
}

}  // namespace
