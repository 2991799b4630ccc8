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

// `lone` written by encode_args and by `fast` (a hot-path encoder) gives
// the same one slot, which reads back as one INT64 arg {key, value}.
void expect_fast_slot_matches_the_general_encoding(const epprof_arg& lone, void (*fast)(Record*, const epprof_arg&),
                                                   uint32_t key, int64_t value) {
  ArgPlan plan;
  ASSERT_EQ(plan_args("test", &lone, 1, /*sets_allowed=*/true, plan), nullptr);
  ASSERT_EQ(slots_for_bytes(plan.bytes), 1u);
  Record general[2] = {}, fast_slots[2] = {};
  general[0].arg_slots = fast_slots[0].arg_slots = 1;
  encode_args(reinterpret_cast<unsigned char*>(general + 1), &lone, 1, plan);
  fast(fast_slots + 1, lone);
  EXPECT_EQ(std::memcmp(general + 1, fast_slots + 1, kSlotBytes), 0) << value;

  ArgIterator it(fast_slots);
  ArgView v;
  ASSERT_TRUE(it.next(v));
  EXPECT_EQ(v.key, key);
  EXPECT_TRUE(v.is_int);
  EXPECT_EQ(v.i64, value);
  EXPECT_FALSE(it.next(v));
}

TEST(Args, LoneSetSlotMatchesTheGeneralEncoding) {
  epprof_arg inner{intern("k"), EPPROF_ARG_INT64, {}};
  inner.value.i64 = 42;
  uint32_t set = 0;
  ASSERT_EQ(intern_arg_set(&inner, 1, &set), nullptr);
  epprof_arg lone{0, EPPROF_ARG_SET, {}};
  lone.value.set = set;
  expect_fast_slot_matches_the_general_encoding(
      lone, [](Record* slot, const epprof_arg& a) { encode_lone_set(slot, a.value.set); }, intern("k"), 42);
}

TEST(Args, LoneIntSlotMatchesTheGeneralEncoding) {
  for (const int64_t value : {int64_t(0), int64_t(-1), INT64_MIN, INT64_MAX, int64_t(0x0123456789abcdef)}) {
    epprof_arg lone{intern("run_id"), EPPROF_ARG_INT64, {}};
    lone.value.i64 = value;
    expect_fast_slot_matches_the_general_encoding(
        lone, [](Record* slot, const epprof_arg& a) { encode_lone_int(slot, a.key, a.value.i64); }, intern("run_id"),
        value);
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
