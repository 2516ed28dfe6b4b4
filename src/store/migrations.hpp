#pragma once
#include <string>
#include <vector>

namespace gpunex::store {

class Store;

//! One schema step; `sql` holds ';'-separated statements in the portable dialect.
struct Migration {
  int version;
  std::string name;
  std::string sql;
  //! When set, PostgreSQL runs this instead of `sql`: triggers are the one thing the two
  //! dialects write differently (migration 6).
  std::string postgres_sql = {};
};

//! Every migration, ordered by version.
const std::vector<Migration>& migrations();

//! migrate() with the given list instead of migrations(), all in one transaction: a step that
//! fails leaves nothing of the list behind. Tests inject a failing list through this.
int migrate(Store& store, const std::vector<Migration>& list);

}  // namespace gpunex::store
