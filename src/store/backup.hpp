#pragma once
// Backups of a SQLite store: a consistent copy of a live database (SQLite's
// online backup API) and its restore. PostgreSQL is backed up with pg_dump.

#include <cstdint>
#include <string>

namespace gpunex::store {

//! What a backup or a restore wrote.
struct CopyReport {
  std::int64_t pages = 0;
  std::int64_t bytes = 0;
  int schema_version = 0;  // the highest migration the copy holds (0: none)
  std::string kept_old;    // restore with replace: where the database it replaced was moved
};

//! Copies the SQLite database at `db_path` into the new file `to` (mode 0600) as one consistent snapshot,
//! while a server keeps writing (in WAL mode a reader blocks no writer). The copy is checked
//! (PRAGMA integrity_check) and written under a temporary name first, so `to` is never half a database; an
//! existing `to` is refused, never overwritten. Throws StoreError.
CopyReport backup_sqlite(const std::string& db_path, const std::string& to);

//! Restores a copy made by backup_sqlite into `db_path` (mode 0600), after checking it is an intact GPUnex
//! database no newer than this program's migrations. An existing `db_path` is refused unless `replace`; then
//! it is refused while any process has it open, and otherwise moved (with its -wal and -shm, which belong to
//! it) beside itself as `db_path.before-restore-<ms>`. Throws StoreError.
CopyReport restore_sqlite(const std::string& from, const std::string& db_path, bool replace);

//! Whether another process has the SQLite database at `db_path` open: a connection in WAL mode holds a
//! shared lock on the -shm file as long as it is open; one in rollback mode holds a lock while it reads or
//! writes. Locks this process holds are not seen.
bool sqlite_in_use(const std::string& db_path);

}  // namespace gpunex::store
