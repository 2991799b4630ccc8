#include "core/args.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/status.h"
#include "core/intern.h"
#include "core/paged_table.h"

namespace epprof::core {
namespace {

// Bytes an arg value takes in the payload, or 0 when it must be interned.
size_t inline_value_bytes(const epprof_arg& a, size_t* len) {
  if (a.type == EPPROF_ARG_INT64) return 8;
  *len = std::strlen(a.value.str);
  if (*len > kMaxInlineValue) return 0;
  return 4 + ((*len + 3) & ~size_t(3));
}

struct SetTable {
  std::mutex mu;
  std::unordered_map<std::string_view, uint32_t> ids;  // key → id; views into the sets' keys
  PagedTable<ArgSet, kMaxArgSets> sets;
};

SetTable& set_table() {
  static SetTable t;
  return t;
}

template <typename Message>
[[gnu::cold, gnu::noinline]] epprof_status* invalid(Message&& message) noexcept {
  return base::status_from(EPPROF_INVALID_ARGUMENT, std::forward<Message>(message));
}

}  // namespace

epprof_status* plan_args(const char* fn, const epprof_arg* args, size_t num_args, bool sets_allowed,
                         ArgPlan& plan) noexcept {
  if (!args && num_args)
    return invalid([&] { return std::string(fn) + ": args is NULL with num_args = " + std::to_string(num_args); });
  if (num_args > kMaxArgs)
    return invalid([&] {
      return std::string(fn) + ": " + std::to_string(num_args) + " args; at most " + std::to_string(kMaxArgs) +
             " are allowed";
    });
  size_t bytes = 4;
  bool has_set = false;
  for (size_t i = 0; i < num_args; ++i) {
    const epprof_arg& a = args[i];
    plan.ids[i] = 0;
    if (a.type == EPPROF_ARG_SET) {
      has_set = true;
      if (!sets_allowed) return invalid([&] { return std::string(fn) + ": arg " + std::to_string(i) + " is an arg set; sets do not nest"; });
      if (a.key != 0) return invalid([&] { return std::string(fn) + ": arg " + std::to_string(i) + " is an arg set and must have key 0"; });
      if (!is_arg_set(a.value.set))
        return invalid([&] {
          return std::string(fn) + ": arg " + std::to_string(i) + " names arg set " + std::to_string(a.value.set) +
                 ", which epprof_arg_set_intern did not return";
        });
      plan.ids[i] = a.value.set;
      bytes += 8 + 4;
      continue;
    }
    if (!is_interned(a.key))
      return invalid([&] { return std::string(fn) + ": arg " + std::to_string(i) + " has a key that is not an interned name id"; });
    if (a.type > EPPROF_ARG_SET)
      return invalid([&] { return std::string(fn) + ": arg '" + *interned(a.key) + "' has unknown type " + std::to_string(a.type); });
    if (a.type == EPPROF_ARG_NAME || a.type == EPPROF_ARG_JSON_NAME) {
      if (!is_interned(a.value.name))
        return invalid([&] { return std::string(fn) + ": value of arg '" + *interned(a.key) + "' is not an interned name id"; });
      plan.ids[i] = a.value.name;
      bytes += 8 + 4;
      continue;
    }
    if (a.type != EPPROF_ARG_INT64 && !a.value.str)
      return invalid([&] { return std::string(fn) + ": value of arg '" + *interned(a.key) + "' is NULL"; });
    size_t v = inline_value_bytes(a, &plan.lens[i]);
    if (v == 0) {
      try {
        plan.ids[i] = intern(std::string_view(a.value.str, plan.lens[i]));
      } catch (const std::bad_alloc&) {
        return base::out_of_memory_status();
      }
      if (!plan.ids[i])
        return base::status_from(EPPROF_RESOURCE_EXHAUSTED, [&] { return std::string(fn) + ": the string table is full"; });
      v = 4;
    }
    bytes += 8 + v;
  }
  // Expanded, an event still has at most kMaxArgs args (what readers of a
  // host event, EP profilers among them, are promised). A lone set has by
  // construction, so the hot path's one-set events skip this.
  if (has_set && num_args > 1) {
    size_t expanded = 0;
    for (size_t i = 0; i < num_args; ++i)
      expanded += args[i].type == EPPROF_ARG_SET ? arg_set(args[i].value.set)->args.size() : 1;
    if (expanded > kMaxArgs)
      return invalid([&] {
        return std::string(fn) + ": with its arg sets expanded the event has " + std::to_string(expanded) +
               " args; at most " + std::to_string(kMaxArgs) + " are allowed";
      });
  }
  plan.bytes = bytes;
  return nullptr;
}

void encode_args(unsigned char* p, const epprof_arg* args, size_t num_args, const ArgPlan& plan) noexcept {
  const uint32_t count = uint32_t(num_args);
  std::memcpy(p, &count, 4);
  p += 4;
  for (size_t i = 0; i < num_args; ++i) {
    const epprof_arg& a = args[i];
    std::memcpy(p, &a.key, 4);
    const bool json = a.type == EPPROF_ARG_JSON || a.type == EPPROF_ARG_JSON_NAME;
    if (a.type == EPPROF_ARG_INT64) {
      p[4] = uint8_t(StoredArg::kInt64);
      std::memcpy(p + 8, &a.value.i64, 8);
      p += 16;
    } else if (plan.ids[i]) {
      p[4] = uint8_t(a.type == EPPROF_ARG_SET ? StoredArg::kSet : json ? StoredArg::kJsonId : StoredArg::kStringId);
      std::memcpy(p + 8, &plan.ids[i], 4);
      p += 12;
    } else {
      p[4] = uint8_t(json ? StoredArg::kJson : StoredArg::kString);
      const uint32_t len = uint32_t(plan.lens[i]);
      std::memcpy(p + 8, &len, 4);
      std::memcpy(p + 12, a.value.str, len);
      p += 12 + ((len + 3) & ~3u);
    }
  }
}

epprof_status* intern_arg_set(const char* fn, const epprof_arg* args, size_t num_args, const NodeIdentity* node,
                              uint32_t* out) noexcept {
  ArgPlan plan;
  if (epprof_status* st = plan_args(fn, args, num_args, /*sets_allowed=*/false, plan)) return st;
  try {
    auto set = std::make_unique<ArgSet>();
    set->payload.assign(plan.bytes, '\0');
    encode_args(reinterpret_cast<unsigned char*>(set->payload.data()), args, num_args, plan);
    // A set's key is its payload, whose length is a multiple of 4; a set
    // that declares a node appends a marker byte and the node, 17 bytes,
    // so no key of one kind equals a key of the other.
    set->key = set->payload;
    if (node) {
      set->has_node = true;
      set->node = *node;
      set->key.push_back('N');
      set->key.append(reinterpret_cast<const char*>(node), sizeof *node);
    }
    static_assert(sizeof(NodeIdentity) == 16, "no padding in the key");
    SetTable& t = set_table();
    std::lock_guard<std::mutex> lock(t.mu);
    if (auto it = t.ids.find(set->key); it != t.ids.end()) {
      *out = it->second;
      return nullptr;
    }
    set->texts.reserve(num_args);
    set->args.assign(args, args + num_args);
    for (epprof_arg& a : set->args) {
      if (a.type != EPPROF_ARG_STRING && a.type != EPPROF_ARG_JSON) continue;
      set->texts.emplace_back(a.value.str);
      a.value.str = set->texts.back().c_str();  // reserved above: no reallocation moves it
    }
    const std::string_view key(set->key);
    const uint32_t id = t.sets.append(std::move(set));
    if (!id)
      return base::status_from(EPPROF_RESOURCE_EXHAUSTED, [&] {
        return std::string(fn) + ": " + std::to_string(kMaxArgSets - 1) + " arg sets exist; the table is full";
      });
    t.ids.emplace(key, id);
    g_arg_sets_published.store(id, std::memory_order_release);
    *out = id;
    return nullptr;
  } catch (const std::bad_alloc&) {
    return base::out_of_memory_status();
  }
}

const ArgSet* arg_set(uint32_t id) noexcept { return set_table().sets.get(id); }

alignas(64) std::atomic<uint32_t> g_arg_sets_published{0};

}  // namespace epprof::core
