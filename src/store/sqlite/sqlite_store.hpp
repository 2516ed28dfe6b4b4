#pragma once
// The SQLite driver of the store interface. Internal to src/store: callers use open_store().

#include <memory>
#include <string>

#include "store/store.hpp"

namespace gpunex::store {

//! Sets the SQLite library's process-wide options, once, before the process's first connection (every
//! sqlite3_open_v2 here comes after it): no memory statistics, which nothing reads and which cost a global
//! mutex around every allocation SQLite makes (Debian's build has no lookaside, so that is several per
//! statement).
void configure_sqlite_library();

//! Opens a SQLite database file (":memory:" for a private in-memory one) as a Store.
std::unique_ptr<Store> open_sqlite_store(const std::string& path, const StoreOptions& options);

}  // namespace gpunex::store
