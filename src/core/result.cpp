#include "core/result.hpp"

namespace gpunex::core {

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_json:
    case ErrorCode::invalid_field:
    case ErrorCode::missing_field:
    case ErrorCode::unknown_field:
    case ErrorCode::bad_request: return 400;
    case ErrorCode::unauthenticated: return 401;
    case ErrorCode::forbidden: return 403;
    case ErrorCode::not_found: return 404;
    case ErrorCode::method_not_allowed: return 405;
    case ErrorCode::conflict: return 409;
    case ErrorCode::gone: return 410;
    case ErrorCode::payload_too_large: return 413;
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
    case ErrorCode::bad_request: return "bad_request";
    case ErrorCode::unauthenticated: return "unauthenticated";
    case ErrorCode::forbidden: return "forbidden";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::method_not_allowed: return "method_not_allowed";
    case ErrorCode::conflict: return "conflict";
    case ErrorCode::gone: return "gone";
    case ErrorCode::payload_too_large: return "payload_too_large";
    case ErrorCode::unprocessable: return "unprocessable";
    case ErrorCode::rate_limited: return "rate_limited";
    case ErrorCode::internal: return "internal";
    case ErrorCode::unavailable: return "unavailable";
  }
  return "internal";
}

}  // namespace gpunex::core
