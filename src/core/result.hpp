#pragma once
// The error policy of GPUnex, in one place: expected failures are values
// (Result<T> carrying an Error); each ErrorCode maps to exactly one HTTP status
// (see http_status()); exceptions are only for what ends a request, and they are
// caught once at the HTTP edge.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gpunex::core {

//! What went wrong, in terms a client can act on.
enum class ErrorCode {
  invalid_json,       // 400: body is not JSON
  invalid_field,      // 400: a field has the wrong type or value
  missing_field,      // 400: a required field is absent
  unknown_field,      // 400: a field the endpoint does not take
  duplicate_field,    // 400: a key given twice in one JSON object (readers disagree on which one wins)
  bad_request,        // 400: anything else malformed
  unauthenticated,    // 401
  payment_required,   // 402: the balance does not cover it
  forbidden,          // 403
  not_found,          // 404
  method_not_allowed, // 405
  conflict,           // 409
  gone,               // 410: it existed, and is no more (a secret already shown once)
  payload_too_large,  // 413
  unsupported_media_type,  // 415: a body not sent as application/json
  unprocessable,      // 422: well-formed, but a business rule refuses it
  rate_limited,       // 429
  internal,           // 500
  unavailable,        // 503
};

//! The HTTP status of an error code: the only place this mapping is written.
int http_status(ErrorCode code);

//! The snake_case name sent as error.code in API responses.
std::string_view code_name(ErrorCode code);

//! One invalid field of a request: its JSON path, a message for a person, and its snake_case code.
struct FieldError {
  std::string field;
  std::string message;
  std::string code;
};

//! An expected failure: code, a human message, and the JSON path of the field at fault.
struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  std::optional<std::string> field;
  //! A more specific machine-readable code than code_name(code), e.g. "email_taken".
  std::optional<std::string> detail_code;
  //! Every invalid field when a request has several; the first of them is also `field` and `message`.
  std::vector<FieldError> fields;
  //! For a refusal that passes with time (429): the seconds until the request would be taken (Retry-After).
  std::optional<std::int64_t> retry_after_s;
  //! The figures the message gives, by name, for a program to act on (error.details: {"needed": "1.000000"}).
  std::vector<std::pair<std::string, std::string>> details;

  static Error make(ErrorCode c, std::string msg, std::optional<std::string> field = std::nullopt) {
    return Error{c, std::move(msg), std::move(field), std::nullopt, {}, std::nullopt, {}};
  }
  Error&& with_detail(std::string name, std::string value) && {
    details.emplace_back(std::move(name), std::move(value));
    return std::move(*this);
  }
  Error&& with_code(std::string c) && {
    detail_code = std::move(c);
    return std::move(*this);
  }
  //! Retry-After: `ms` from now, in whole seconds rounded up (at least 1).
  Error&& with_retry_after_ms(std::int64_t ms) && {
    retry_after_s = std::max<std::int64_t>(1, (ms + 999) / 1000);
    return std::move(*this);
  }
  //! error.code as sent: the detail code when there is one.
  std::string code_text() const;
  //! Every invalid field: `fields`, or just `field` when the error names one, or none.
  std::vector<FieldError> all_fields() const;
};

//! A value or an Error. Deliberately small; std::expected is not in C++20.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

//! Result for operations with no value.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

//! Gathers the errors of one request, so that a single answer lists every invalid field. The first
//! error gives the answer its code, message and field; each field is listed once, at its first error.
class ErrorList {
 public:
  void add(Error e);
  bool empty() const { return !first_.has_value(); }
  //! Whether an error names `field` (a JSON path).
  bool has(std::string_view field) const;
  //! ok, or the first error carrying every invalid field.
  Status status() const;

 private:
  std::optional<Error> first_;
  std::vector<FieldError> fields_;
};

}  // namespace gpunex::core
