#pragma once
// Small shapes that API handlers share: one store transaction answered as JSON, and a list
// answered a page at a time.

#include <cstddef>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "server/app.hpp"
#include "server/paging.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! Runs fn(tx) -> Result<json> in one transaction and answers 200 with it, or the error.
template <class F>
http::Response respond(Ctx& ctx, F&& fn, store::TxMode mode = store::TxMode::write) {
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> { return fn(tx); }, mode);
  if (!r) return http::Response::error(r.error());
  return http::Response::json(200, *r);
}

//! A list built whole in one read transaction (items_of(tx) -> an ordered JSON array of objects
//! with an "id"), answered a page at a time as ?limit=&cursor= ask.
template <class F>
http::Response list_response(Ctx& ctx, F&& items_of, std::size_t default_limit = 50) {
  auto page = page_params(ctx.req, default_limit);
  if (!page) return http::Response::error(page.error());
  auto items = ctx.store().transact([&](store::Tx& tx) -> nlohmann::json { return items_of(tx); }, store::TxMode::read);
  auto j = page_of(items, *page);
  if (!j) return http::Response::error(j.error());
  return http::Response::json(200, *j);
}

}  // namespace gpunex::server
