#pragma once
// The PostgreSQL driver of the store interface. Internal to src/store: callers use open_store().

#include <memory>
#include <string>

#include "store/store.hpp"

namespace gpunex::store {

//! Connects to a "postgresql://" URL as a Store; the first connection is made now to fail early.
std::unique_ptr<Store> open_postgres_store(const std::string& url, const StoreOptions& options);

}  // namespace gpunex::store
