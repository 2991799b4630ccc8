#include "core/record.h"

#include "core/intern.h"

namespace epprof::core {

ArgIterator::ArgIterator(const Record* r) noexcept {
  if (r->arg_slots == 0) return;
  p_ = reinterpret_cast<const unsigned char*>(r + 1);
  std::memcpy(&count_, p_, 4);
  p_ += 4;
}

bool ArgIterator::next(ArgView& out) noexcept {
  if (seen_ == count_) return false;
  ++seen_;
  std::memcpy(&out.key, p_, 4);
  auto type = StoredArg(p_[4]);
  p_ += 8;
  out.is_int = false;
  out.is_json = false;
  out.i64 = 0;
  out.str = {};
  switch (type) {
    case StoredArg::kInt64:
      out.is_int = true;
      std::memcpy(&out.i64, p_, 8);
      p_ += 8;
      break;
    case StoredArg::kString:
    case StoredArg::kJson: {
      uint32_t len;
      std::memcpy(&len, p_, 4);
      out.str = std::string_view(reinterpret_cast<const char*>(p_ + 4), len);
      out.is_json = type == StoredArg::kJson;
      p_ += 4 + ((len + 3) & ~3u);
      break;
    }
    case StoredArg::kStringId:
    case StoredArg::kJsonId: {
      uint32_t id;
      std::memcpy(&id, p_, 4);
      const std::string* s = interned(id);
      out.str = s ? std::string_view(*s) : std::string_view();
      out.is_json = type == StoredArg::kJsonId;
      p_ += 4;
      break;
    }
  }
  return true;
}

}  // namespace epprof::core
