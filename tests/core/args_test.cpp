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
  ASSERT_EQ(intern_arg_set("test", &inner, 1, nullptr, &set), nullptr);
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
  ASSERT_EQ(intern_arg_set("test", &a, 1, nullptr, &id), nullptr);
  EXPECT_TRUE(is_arg_set(id));
  EXPECT_FALSE(is_arg_set(id + 1));
  ASSERT_NE(arg_set(id), nullptr);
  EXPECT_EQ(arg_set(id)->args.size(), 1u);
  EXPECT_EQ(arg_set(id + 1), nullptr);
}

// A set that declares a node is its own set: the same args with another
// node, or none, get other ids; the same args and node, the same id.
TEST(Args, NodeSetsAreKeyedByTheirNodeToo) {
  epprof_arg a{intern("op_name"), EPPROF_ARG_NAME, {}};
  a.value.name = intern("Conv");
  const NodeIdentity conv0{intern("conv0"), intern("Conv"), 0, 0}, conv1{intern("conv1"), intern("Conv"), 1, 0};
  uint32_t plain = 0, first = 0, again = 0, other = 0;
  ASSERT_EQ(intern_arg_set("test", &a, 1, nullptr, &plain), nullptr);
  ASSERT_EQ(intern_arg_set("test", &a, 1, &conv0, &first), nullptr);
  ASSERT_EQ(intern_arg_set("test", &a, 1, &conv0, &again), nullptr);
  ASSERT_EQ(intern_arg_set("test", &a, 1, &conv1, &other), nullptr);
  EXPECT_NE(plain, first);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  EXPECT_FALSE(arg_set(plain)->has_node);
  ASSERT_TRUE(arg_set(other)->has_node);
  EXPECT_EQ(arg_set(other)->node.index, 1u);
  EXPECT_EQ(arg_set(other)->payload, arg_set(plain)->payload) << "the node is not an arg";
}

// node_of finds the node among a record's own args, after args of every
// stored type, and only in a set that declares one.
TEST(Args, NodeOfReadsTheFirstDeclaringSetAmongTheRecordsArgs) {
  const NodeIdentity node{intern("mm"), intern("MatMul"), 7, intern("CPUExecutionProvider")};
  uint32_t plain = 0, declaring = 0;
  epprof_arg k{intern("k"), EPPROF_ARG_INT64, {}};
  ASSERT_EQ(intern_arg_set("test", &k, 1, nullptr, &plain), nullptr);
  ASSERT_EQ(intern_arg_set("test", nullptr, 0, &node, &declaring), nullptr);
  std::vector<epprof_arg> args(5);
  args[0] = {intern("s"), EPPROF_ARG_STRING, {}};
  args[0].value.str = "seven bytes";
  args[1] = {intern("i"), EPPROF_ARG_INT64, {}};
  args[2] = {0, EPPROF_ARG_SET, {}};
  args[2].value.set = plain;
  args[3] = {intern("j"), EPPROF_ARG_JSON, {}};
  args[3].value.str = "[1,2,3]";
  args[4] = {0, EPPROF_ARG_SET, {}};
  args[4].value.set = declaring;
  for (size_t n : {size_t(4), size_t(5)}) {
    ArgPlan plan;
    ASSERT_EQ(plan_args("test", args.data(), n, /*sets_allowed=*/true, plan), nullptr);
    std::vector<Record> slots(1 + slots_for_bytes(plan.bytes));
    slots[0].arg_slots = uint16_t(slots.size() - 1);
    encode_args(reinterpret_cast<unsigned char*>(slots.data() + 1), args.data(), n, plan);
    const NodeIdentity* found = node_of(slots.data());
    if (n == 4) {
      EXPECT_EQ(found, nullptr);
      continue;
    }
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->name, node.name);
    EXPECT_EQ(found->op_type, node.op_type);
    EXPECT_EQ(found->index, 7u);
    EXPECT_EQ(found->ep, node.ep);
  }
  Record bare{};
  EXPECT_EQ(node_of(&bare), nullptr);
}

// A record whose one arg set rides inline (kRecordInlineSet) has no payload
// slot and reads as that set: its args through ArgIterator, its node
// through node_of.
TEST(Args, AnInlineSetReadsAsTheSet) {
  const NodeIdentity node{intern("gemm0"), intern("Gemm"), 3, intern("CPUExecutionProvider")};
  epprof_arg k{intern("k"), EPPROF_ARG_INT64, {}};
  k.value.i64 = -5;
  uint32_t id = 0;
  ASSERT_EQ(intern_arg_set("test", &k, 1, &node, &id), nullptr);
  ASSERT_LE(id, kMaxInlineSet);
  Record r{};
  r.flags = kRecordInlineSet;
  r.arg_slots = uint16_t(id);
  EXPECT_EQ(payload_slots(r), 0u);
  ArgIterator it(&r);
  ArgView v;
  ASSERT_TRUE(it.next(v));
  EXPECT_EQ(v.key, intern("k"));
  EXPECT_TRUE(v.is_int);
  EXPECT_EQ(v.i64, -5);
  EXPECT_FALSE(it.next(v));
  const NodeIdentity* found = node_of(&r);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->index, 3u);
  EXPECT_EQ(found->name, node.name);
  r.flags = 0;
  r.arg_slots = 2;
  EXPECT_EQ(payload_slots(r), 2u);
}

}  // namespace
