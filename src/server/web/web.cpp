#include "server/web/web.hpp"

namespace gpunex::web {

const Asset* find_asset(std::string_view path) {
  for (const auto& a : assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

}  // namespace gpunex::web
