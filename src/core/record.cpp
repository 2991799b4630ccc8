#include "core/record.h"

#include "core/args.h"
#include "core/intern.h"

namespace epprof::core {

namespace {

void open_list(const unsigned char* payload, uint32_t* count, const unsigned char** p) noexcept {
  std::memcpy(count, payload, 4);
  *p = payload + 4;
}

// The bytes of one entry's value, from its type (past the 8-byte head).
size_t value_bytes(StoredArg type, const unsigned char* value) noexcept {
  switch (type) {
    case StoredArg::kInt64:
      return 8;
    case StoredArg::kString:
    case StoredArg::kJson: {
      uint32_t len;
      std::memcpy(&len, value, 4);
      return 4 + ((len + 3) & ~size_t(3));
    }
    case StoredArg::kStringId:
    case StoredArg::kJsonId:
    case StoredArg::kSet:
      return 4;
  }
  return 0;
}

}  // namespace

const NodeIdentity* node_of(const Record* r) noexcept {
  if (r->arg_slots == 0) return nullptr;
  if (r->flags & kRecordInlineSet) {
    const ArgSet* set = arg_set(r->arg_slots);
    return set && set->has_node ? &set->node : nullptr;
  }
  uint32_t count;
  const unsigned char* p;
  open_list(reinterpret_cast<const unsigned char*>(r + 1), &count, &p);
  for (uint32_t i = 0; i < count; ++i) {
    const auto type = StoredArg(p[4]);
    p += 8;
    if (type == StoredArg::kSet) {
      uint32_t id;
      std::memcpy(&id, p, 4);
      const ArgSet* set = arg_set(id);
      if (set && set->has_node) return &set->node;
    }
    p += value_bytes(type, p);
  }
  return nullptr;
}

ArgIterator::ArgIterator(const Record* r) noexcept {
  if (r->arg_slots == 0) return;
  if (r->flags & kRecordInlineSet) {  // the set's list, inside an empty list of the record's own
    if (const ArgSet* set = arg_set(r->arg_slots)) {
      open_list(reinterpret_cast<const unsigned char*>(set->payload.data()), &list_.count, &list_.p);
      in_set_ = true;
    }
    return;
  }
  open_list(reinterpret_cast<const unsigned char*>(r + 1), &list_.count, &list_.p);
}

bool ArgIterator::next(ArgView& out) noexcept {
  while (list_.seen == list_.count) {
    if (!in_set_) return false;
    list_ = outer_;
    in_set_ = false;
  }
  ++list_.seen;
  const unsigned char*& p = list_.p;  // advanced as the entry is read
  std::memcpy(&out.key, p, 4);
  auto type = StoredArg(p[4]);
  p += 8;
  if (type == StoredArg::kSet) {
    uint32_t id;
    std::memcpy(&id, p, 4);
    p += 4;
    const ArgSet* set = arg_set(id);
    if (!set) return next(out);  // cannot happen: ids are validated when recorded
    outer_ = list_;
    list_ = List{};
    open_list(reinterpret_cast<const unsigned char*>(set->payload.data()), &list_.count, &list_.p);
    in_set_ = true;
    return next(out);
  }
  out.is_int = false;
  out.is_json = false;
  out.i64 = 0;
  out.str = {};
  switch (type) {
    case StoredArg::kInt64:
      out.is_int = true;
      std::memcpy(&out.i64, p, 8);
      p += 8;
      break;
    case StoredArg::kString:
    case StoredArg::kJson: {
      uint32_t len;
      std::memcpy(&len, p, 4);
      out.str = std::string_view(reinterpret_cast<const char*>(p + 4), len);
      out.is_json = type == StoredArg::kJson;
      p += 4 + ((len + 3) & ~3u);
      break;
    }
    case StoredArg::kStringId:
    case StoredArg::kJsonId: {
      uint32_t id;
      std::memcpy(&id, p, 4);
      const std::string* s = interned(id);
      out.str = s ? std::string_view(*s) : std::string_view();
      out.is_json = type == StoredArg::kJsonId;
      p += 4;
      break;
    }
    case StoredArg::kSet:
      break;  // handled above
  }
  return true;
}

}  // namespace epprof::core
