#pragma once
// Structured logging: one JSON object per line on stderr (spdlog).

#include <string_view>

#include <nlohmann/json.hpp>

namespace gpunex::util {

//! Sets up the default logger; level is trace|debug|info|warn|error. Returns false on an unknown level.
bool init_logging(std::string_view level);
//! Writes {"ts", "level", "msg", ...fields} as one line.
void log_event(std::string_view level, std::string_view msg, nlohmann::json fields = nlohmann::json::object());

}  // namespace gpunex::util
