// White-box: the pass planner on synthetic PMUs of various sizes.
#include <gtest/gtest.h>

#include <deque>

#include "counters/backend.h"

namespace epprof::counters {
namespace {

struct Builder {
  std::deque<CounterDef> defs;
  Plan plan;
  size_t add(const std::string& name, Slot slot, Source source = Source::Backend) {
    CounterDef& c = defs.emplace_back();
    c.name = name;
    c.slot = slot;
    c.source = source;
    plan.counters.push_back(&c);
    plan.numerator_index.push_back(-1);
    plan.denominator_index.push_back(-1);
    return plan.counters.size() - 1;
  }
  size_t ratio(const std::string& name, size_t num, size_t den) {
    const size_t i = add(name, Slot::None, Source::Ratio);
    plan.numerator_index[i] = int(num);
    plan.denominator_index[i] = int(den);
    return i;
  }
};

TEST(Planner, FirstFitInOrder) {
  Builder b;
  for (int i = 0; i < 6; ++i) b.add("p" + std::to_string(i), Slot::Programmable);
  ASSERT_EQ(plan_passes(4, &b.plan), "");
  EXPECT_EQ(b.plan.num_passes, 2u);
  EXPECT_EQ(b.plan.pass_of, (std::vector<uint32_t>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(b.plan.members[1], (std::vector<size_t>{4, 5}));
}

TEST(Planner, SoftwareAndFixedTakeNoSlotAndHardwareLeadsTheGroup) {
  Builder b;
  const size_t sw = b.add("task-clock", Slot::None);
  const size_t fx = b.add("cycles", Slot::Fixed);
  for (int i = 0; i < 4; ++i) b.add("p" + std::to_string(i), Slot::Programmable);
  const size_t host = b.add("flops", Slot::None, Source::HostFlops);
  ASSERT_EQ(plan_passes(4, &b.plan), "");
  EXPECT_EQ(b.plan.num_passes, 1u);
  EXPECT_EQ(b.plan.pass_of[sw], 0u);
  EXPECT_EQ(b.plan.pass_of[host], 0u);
  // Group order: PMU events first, the software event last; host measures are not members.
  EXPECT_EQ(b.plan.members[0], (std::vector<size_t>{fx, 2, 3, 4, 5, sw}));
}

TEST(Planner, RatioInputsShareAPassEvenWhenNamedLate) {
  Builder b;
  b.add("p0", Slot::Programmable);
  b.add("p1", Slot::Programmable);
  b.add("p2", Slot::Programmable);
  const size_t ins = b.add("ins", Slot::Programmable);
  const size_t cyc = b.add("cyc", Slot::Programmable);
  const size_t ipc = b.ratio("ipc", ins, cyc);
  ASSERT_EQ(plan_passes(4, &b.plan), "");
  // The ratio's inputs are placed first, together; the rest fill in after.
  EXPECT_EQ(b.plan.pass_of[ins], b.plan.pass_of[cyc]);
  EXPECT_EQ(b.plan.pass_of[ipc], b.plan.pass_of[ins]);
  EXPECT_EQ(b.plan.pass_of, (std::vector<uint32_t>{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(b.plan.num_passes, 2u);
}

TEST(Planner, ImpossiblePlansAreExplained) {
  Builder b;
  const size_t x = b.add("x", Slot::Programmable);
  const size_t y = b.add("y", Slot::Programmable);
  b.ratio("xy", x, y);
  const std::string why = plan_passes(1, &b.plan);
  EXPECT_NE(why.find("'xy' needs 2 programmable counters"), std::string::npos) << why;
  Builder none;
  none.add("p", Slot::Programmable);
  EXPECT_NE(plan_passes(0, &none.plan).find("has none"), std::string::npos);
}

}  // namespace
}  // namespace epprof::counters
