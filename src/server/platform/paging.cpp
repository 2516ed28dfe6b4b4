#include "server/platform/paging.hpp"

#include <charconv>

namespace gpunex::server {

core::Result<PageParams> page_params(const http::Request& req, std::size_t default_limit, std::size_t max_limit) {
  PageParams p;
  p.limit = default_limit;
  if (auto v = req.query_param("limit"); v && !v->empty()) {
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc{} || end != v->data() + v->size() || n < 1 || n > max_limit) {
      return core::Error::make(core::ErrorCode::invalid_field,
                               "limit must be a whole number from 1 to " + std::to_string(max_limit), "limit");
    }
    p.limit = n;
  }
  if (auto v = req.query_param("cursor"); v && !v->empty()) {
    if (v->size() > 128) return core::Error::make(core::ErrorCode::invalid_field, "cursor is not valid", "cursor");
    p.after = *v;
  }
  return p;
}

core::Result<nlohmann::json> page_of(const nlohmann::json& all, const PageParams& p, const char* id_key) {
  std::vector<std::string> ids;
  ids.reserve(all.size());
  for (const auto& item : all) ids.push_back(item.value(id_key, std::string{}));
  auto s = page_slice(ids, p, [](const std::string& id) -> const std::string& { return id; });
  if (!s) return std::move(s).error();
  auto items = nlohmann::json::array();
  for (std::size_t i = s->begin; i < s->end; ++i) items.push_back(all[i]);
  return nlohmann::json{{"items", std::move(items)}, {"next_cursor", s->next_cursor}};
}

core::Result<nlohmann::json> page_of(const nlohmann::json& all, const PageParams& p,
                                     const std::function<bool(const nlohmann::json&)>& keep, const char* id_key) {
  std::size_t at = 0;
  if (p.after) {
    while (at < all.size() && all[at].value(id_key, std::string{}) != *p.after) ++at;
    if (at == all.size()) {
      return core::Error::make(core::ErrorCode::invalid_field, "cursor does not name an item of this list", "cursor");
    }
    ++at;
  }
  auto items = nlohmann::json::array();
  nlohmann::json next = nullptr;
  for (; at < all.size(); ++at) {
    if (!keep(all[at])) continue;
    if (items.size() == p.limit) {  // one more kept item: there is a next page, from the last one shown
      next = items.back()[id_key];
      break;
    }
    items.push_back(all[at]);
  }
  return nlohmann::json{{"items", std::move(items)}, {"next_cursor", std::move(next)}};
}

}  // namespace gpunex::server
