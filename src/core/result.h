// tenzro core: Result<T>, a value or an Error.
//
// Member names follow std::expected<T, Error> (has_value, value, error,
// operator*, operator->, value_or) so the type can be swapped for it once the
// toolchains have <expected>. A Result<void> carries only success or an Error.
//
//   Result<Header> ReadHeader(ByteReader& r);
//   auto h = ReadHeader(r);
//   if (!h) return h.error().WithContext(path);
//   Use(*h);
//
// TENZRO_TRY(var, expr) unwraps a Result or returns its error from the
// enclosing function (which must return a Result of any type).
#pragma once

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/error.h"

namespace tenzro {

template <typename T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(const T& v) : v_(std::in_place_index<0>, v) {}  // NOLINT: implicit by design
  Result(T&& v) : v_(std::in_place_index<0>, std::move(v)) {}  // NOLINT
  Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, T> &&
                                        !std::is_same_v<std::decay_t<U>, Error> &&
                                        !std::is_same_v<std::decay_t<U>, Result>>>
  Result(U&& u) : v_(std::in_place_index<0>, T(std::forward<U>(u))) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  // REQUIRES: has_value().
  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // REQUIRES: !has_value().
  const Error& error() const { assert(!has_value()); return std::get<1>(v_); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : e_(std::move(e)) {}  // NOLINT: implicit by design

  bool has_value() const { return !e_.has_value(); }
  explicit operator bool() const { return has_value(); }
  void value() const { assert(has_value()); }
  // REQUIRES: !has_value().
  const Error& error() const { assert(e_.has_value()); return *e_; }

 private:
  std::optional<Error> e_;
};

// The success value of Result<void>.
inline Result<void> Ok() { return Result<void>(); }

}  // namespace tenzro

#define TENZRO_CONCAT_INNER_(a, b) a##b
#define TENZRO_CONCAT_(a, b) TENZRO_CONCAT_INNER_(a, b)

// Evaluates `expr` (a Result<T>); on error returns the error, else moves the
// value into the declaration `decl` (e.g. `auto x`, `const Header& h`).
#define TENZRO_TRY(decl, expr)                                   \
  auto TENZRO_CONCAT_(tenzro_try_, __LINE__) = (expr);           \
  if (!TENZRO_CONCAT_(tenzro_try_, __LINE__))                    \
    return TENZRO_CONCAT_(tenzro_try_, __LINE__).error();        \
  decl = std::move(*TENZRO_CONCAT_(tenzro_try_, __LINE__))

// Evaluates `expr` (a Result<void> or any Result); returns its error if any.
#define TENZRO_CHECK_OK(expr)                                    \
  do {                                                           \
    auto tenzro_ok_ = (expr);                                    \
    if (!tenzro_ok_) return tenzro_ok_.error();                  \
  } while (0)
