#include "core/result.hpp"

#include <algorithm>

namespace gpunex::core {

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_json:
    case ErrorCode::invalid_field:
    case ErrorCode::missing_field:
    case ErrorCode::unknown_field:
    case ErrorCode::duplicate_field:
    case ErrorCode::bad_request: return 400;
    case ErrorCode::unauthenticated: return 401;
    case ErrorCode::payment_required: return 402;
    case ErrorCode::forbidden: return 403;
    case ErrorCode::not_found: return 404;
    case ErrorCode::method_not_allowed: return 405;
    case ErrorCode::conflict: return 409;
    case ErrorCode::gone: return 410;
    case ErrorCode::payload_too_large: return 413;
    case ErrorCode::unsupported_media_type: return 415;
    case ErrorCode::unprocessable: return 422;
    case ErrorCode::rate_limited: return 429;
    case ErrorCode::internal: return 500;
    case ErrorCode::unavailable: return 503;
  }
  return 500;
}

std::string_view code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_json: return "invalid_json";
    case ErrorCode::invalid_field: return "invalid_field";
    case ErrorCode::missing_field: return "missing_field";
    case ErrorCode::unknown_field: return "unknown_field";
    case ErrorCode::duplicate_field: return "duplicate_field";
    case ErrorCode::bad_request: return "bad_request";
    case ErrorCode::unauthenticated: return "unauthenticated";
    case ErrorCode::payment_required: return "payment_required";
    case ErrorCode::forbidden: return "forbidden";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::method_not_allowed: return "method_not_allowed";
    case ErrorCode::conflict: return "conflict";
    case ErrorCode::gone: return "gone";
    case ErrorCode::payload_too_large: return "payload_too_large";
    case ErrorCode::unsupported_media_type: return "unsupported_media_type";
    case ErrorCode::unprocessable: return "unprocessable";
    case ErrorCode::rate_limited: return "rate_limited";
    case ErrorCode::internal: return "internal";
    case ErrorCode::unavailable: return "unavailable";
  }
  return "internal";
}

std::string Error::code_text() const { return detail_code ? *detail_code : std::string(code_name(code)); }

std::vector<FieldError> Error::all_fields() const {
  if (!fields.empty()) return fields;
  if (field) return {FieldError{*field, message, code_text()}};
  return {};
}

void ErrorList::add(Error e) {
  for (auto& f : e.all_fields()) {
    if (!has(f.field)) fields_.push_back(std::move(f));
  }
  if (!first_) first_ = std::move(e);
}

bool ErrorList::has(std::string_view field) const {
  return std::any_of(fields_.begin(), fields_.end(), [&](const FieldError& f) { return f.field == field; });
}

Status ErrorList::status() const {
  if (!first_) return ok_status();
  Error e = *first_;
  e.fields = fields_;
  return e;
}

}  // namespace gpunex::core
