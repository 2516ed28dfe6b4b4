#pragma once
// List pages (API.md: lists take ?limit=&cursor= and answer {"items", "next_cursor"}).
// A cursor is the id of the last item of the previous page, so a page stays put
// when items are added before it; clients treat it as opaque.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/page_limits.hpp"
#include "core/result.hpp"
#include "server/http/http.hpp"

namespace gpunex::server {

struct PageParams {
  std::size_t limit = 50;
  std::optional<std::string> after;  // the previous page's last id
};

//! Reads ?limit= (1..max_limit, default default_limit) and ?cursor=; errors name the parameter.
core::Result<PageParams> page_params(const http::Request& req, std::size_t default_limit = core::kDefaultPageLimit,
                                     std::size_t max_limit = core::kMaxPageLimit);

//! The part of an ordered list that a page shows: [begin, end), and the next cursor.
struct PageSlice {
  std::size_t begin = 0;
  std::size_t end = 0;
  nlohmann::json next_cursor;  // null on the last page
};

//! Where the page falls in `all` (ordered as the list is shown); id_of(item) gives an item's id.
//! A cursor that names no item in the list is a 400 naming "cursor".
template <class T, class IdOf>
core::Result<PageSlice> page_slice(const std::vector<T>& all, const PageParams& p, IdOf id_of) {
  PageSlice s;
  if (p.after) {
    auto it = std::find_if(all.begin(), all.end(), [&](const T& x) { return id_of(x) == *p.after; });
    if (it == all.end()) {
      return core::Error::make(core::ErrorCode::invalid_field, "cursor does not name an item of this list", "cursor");
    }
    s.begin = static_cast<std::size_t>(it - all.begin()) + 1;
  }
  s.end = std::min(all.size(), s.begin + p.limit);
  s.next_cursor = nullptr;
  if (s.end < all.size() && s.end > s.begin) s.next_cursor = std::string(id_of(all[s.end - 1]));
  return s;
}

//! {"items": the page of `all` (JSON objects, each named by its id_key field), "next_cursor"}.
core::Result<nlohmann::json> page_of(const nlohmann::json& all, const PageParams& p, const char* id_key = "id");
//! The same for the items of `all` that `keep` keeps (a filter): the cursor is found in the whole of `all`, so
//! a page stays valid when the item it ended on no longer passes the filter (a rental that has ended since).
core::Result<nlohmann::json> page_of(const nlohmann::json& all, const PageParams& p,
                                     const std::function<bool(const nlohmann::json&)>& keep, const char* id_key = "id");

}  // namespace gpunex::server
