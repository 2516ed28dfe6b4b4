#include "util/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace gpunex::util {

bool init_logging(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") return false;
  auto logger = spdlog::stderr_logger_mt("gpunex");
  logger->set_pattern("%v");
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return true;
}

void log_event(std::string_view level, std::string_view msg, nlohmann::json fields) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (!spdlog::default_logger_raw()->should_log(lvl)) return;
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  nlohmann::json line = {{"ts_ms", ms}, {"level", level}, {"msg", msg}};
  for (auto& [k, v] : fields.items()) line[k] = std::move(v);
  spdlog::log(lvl, "{}", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace gpunex::util
