// A C enum received through the C ABI, read as the integer the caller
// passed. C lets a caller pass any int where an enum is declared; C++
// leaves a load of an enum-typed value outside its enumerators' range
// undefined (clang's -fsanitize=enum reports it: epprof_category_name(-1)).
// The entry points validate such values, so they read them this way first.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace epprof::base {

template <typename E>
inline uint32_t c_enum_value(const E& e) noexcept {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(uint32_t), "a C enum, 32 bits wide");
  uint32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace epprof::base
