#pragma once
// The SQLite driver of the store interface. Internal to src/store: callers use open_store().

#include <memory>
#include <string>

#include "store/store.hpp"

namespace gpunex::store {

//! Opens a SQLite database file (":memory:" for a private in-memory one) as a Store.
std::unique_ptr<Store> open_sqlite_store(const std::string& path, const StoreOptions& options);

}  // namespace gpunex::store
