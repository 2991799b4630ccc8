// Arg encoding (core/args.h): the hot path's lone-set slot is what the
// general encoder writes, and the decoder expands sets in place.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/args.h"
#include "core/intern.h"
#include "epprof/status.h"

namespace {

using namespace epprof::core;

TEST(Args, LoneSetSlotMatchesTheGeneralEncoding) {
  epprof_arg inner{intern("k"), EPPROF_ARG_INT64, {}};
  inner.value.i64 = 42;
  uint32_t set = 0;
  ASSERT_EQ(intern_arg_set(&inner, 1, &set), nullptr);
  epprof_arg lone{0, EPPROF_ARG_SET, {}};
  lone.value.set = set;
  ArgPlan plan;
  ASSERT_EQ(plan_args("test", &lone, 1, /*sets_allowed=*/true, plan), nullptr);
  ASSERT_EQ(slots_for_bytes(plan.bytes), 1u);
  Record general[2] = {}, fast[2] = {};
  general[0].arg_slots = fast[0].arg_slots = 1;
  encode_args(reinterpret_cast<unsigned char*>(general + 1), &lone, 1, plan);
  encode_lone_set(fast + 1, set);
  EXPECT_EQ(std::memcmp(general + 1, fast + 1, kSlotBytes), 0);

  ArgIterator it(fast);
  ArgView v;
  ASSERT_TRUE(it.next(v));
  EXPECT_EQ(v.key, intern("k"));
  EXPECT_TRUE(v.is_int);
  EXPECT_EQ(v.i64, 42);
  EXPECT_FALSE(it.next(v));
}

TEST(Args, LoneIntSlotMatchesTheGeneralEncoding) {
  for (const int64_t value : {int64_t(0), int64_t(-1), INT64_MIN, INT64_MAX, int64_t(0x0123456789abcdef)}) {
    epprof_arg lone{intern("run_id"), EPPROF_ARG_INT64, {}};
    lone.value.i64 = value;
    ArgPlan plan;
    ASSERT_EQ(plan_args("test", &lone, 1, /*sets_allowed=*/true, plan), nullptr);
    ASSERT_EQ(slots_for_bytes(plan.bytes), 1u);
    Record general[2] = {}, fast[2] = {};
    general[0].arg_slots = fast[0].arg_slots = 1;
    encode_args(reinterpret_cast<unsigned char*>(general + 1), &lone, 1, plan);
    encode_lone_int(fast + 1, lone.key, value);
    EXPECT_EQ(std::memcmp(general + 1, fast + 1, kSlotBytes), 0) << value;

    ArgIterator it(fast);
    ArgView v;
    ASSERT_TRUE(it.next(v));
    EXPECT_EQ(v.key, intern("run_id"));
    EXPECT_TRUE(v.is_int);
    EXPECT_EQ(v.i64, value);
    EXPECT_FALSE(it.next(v));
  }
}

TEST(Args, SetIdsArePublishedInOrder) {
  EXPECT_FALSE(is_arg_set(0));
  epprof_arg a{intern("n"), EPPROF_ARG_INT64, {}};
  a.value.i64 = 123456789;
  uint32_t id = 0;
  ASSERT_EQ(intern_arg_set(&a, 1, &id), nullptr);
  EXPECT_TRUE(is_arg_set(id));
  EXPECT_FALSE(is_arg_set(id + 1));
  ASSERT_NE(arg_set(id), nullptr);
  EXPECT_EQ(arg_set(id)->args.size(), 1u);
  EXPECT_EQ(arg_set(id + 1), nullptr);
}

}  // namespace
