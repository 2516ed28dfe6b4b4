// backup_sqlite and restore_sqlite (store/backup.hpp) on SQLite's online backup API.

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/backup.hpp"
#include "store/migrations.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "store/store.hpp"

namespace gpunex::store {

namespace {

namespace fs = std::filesystem;

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;

[[noreturn]] void fail(const std::string& what, sqlite3* db = nullptr, int rc = SQLITE_OK) {
  std::string msg = "store: " + what;
  if (db) msg += ": " + std::string(sqlite3_errmsg(db));
  else if (rc != SQLITE_OK) msg += ": " + std::string(sqlite3_errstr(rc));
  throw StoreError(msg);
}

Db open_db(const std::string& path, int flags) {
  configure_sqlite_library();
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) fail("cannot open " + path, db.get(), rc);
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), 10'000);
  return db;
}

//! The first column of each row of `sql`, as text (PRAGMAs and one-value queries).
std::vector<std::string> column(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) fail(sql, db);
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt(raw, &sqlite3_finalize);
  std::vector<std::string> out;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(stmt.get(), 0);
    out.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
  }
  if (rc != SQLITE_DONE) fail(sql, db);
  return out;
}

//! The schema version a database holds; nullopt when it has no schema_migrations table (not GPUnex's).
std::optional<int> schema_version(sqlite3* db) {
  if (column(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").empty()) {
    return std::nullopt;
  }
  const auto v = column(db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  return v.empty() ? 0 : std::stoi(v.front());
}

void check_intact(sqlite3* db, const std::string& name) {
  const auto result = column(db, "PRAGMA integrity_check");
  if (result.size() != 1 || result.front() != "ok") {
    fail(name + " fails PRAGMA integrity_check: " + (result.empty() ? std::string("no answer") : result.front()));
  }
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string parent_of(const std::string& path) {
  const auto dir = fs::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

//! A new empty file beside `final_path`, mode 0600, removed on destruction unless kept.
class TempFile {
 public:
  explicit TempFile(const std::string& final_path) {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = (fs::path(parent_of(final_path)) /
             ("." + fs::path(final_path).filename().string() + ".part-" + std::to_string(::getpid()) + "-" +
              std::to_string(now)))
                .string();
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) fail("cannot create " + path_ + ": " + std::strerror(errno));
    ::close(fd);
  }
  ~TempFile() {
    if (path_.empty()) return;
    std::error_code ec;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(path_ + suffix, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  void keep() { path_.clear(); }

 private:
  std::string path_;
};

//! Copies database `src` into the empty file `dest_path` with the online backup API, in one step: one read
//! transaction, so one snapshot. Leaves the copy in rollback-journal mode (a standalone file, no -wal
//! beside it), checked intact. Returns its page count and schema version.
CopyReport copy_database(sqlite3* src, const std::string& dest_path) {
  auto dest = open_db(dest_path, SQLITE_OPEN_READWRITE);
  sqlite3_backup* backup = sqlite3_backup_init(dest.get(), "main", src, "main");
  if (!backup) fail("cannot start the backup", dest.get());
  int rc = SQLITE_OK;
  // A writer holding the lock a moment (SQLite's own busy handler is not used by backup_step) is waited out.
  for (int attempt = 0; attempt < 400; ++attempt) {
    rc = sqlite3_backup_step(backup, -1);
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  CopyReport report;
  report.pages = sqlite3_backup_pagecount(backup);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) fail("the backup did not complete", nullptr, rc);
  if (sqlite3_errcode(dest.get()) != SQLITE_OK) fail("the backup did not complete", dest.get());
  column(dest.get(), "PRAGMA journal_mode=DELETE");
  check_intact(dest.get(), "the copy");
  report.schema_version = schema_version(dest.get()).value_or(0);
  dest.reset();
  fsync_path(dest_path, O_RDONLY);
  std::error_code ec;
  report.bytes = static_cast<std::int64_t>(fs::file_size(dest_path, ec));
  return report;
}

bool locked_by_another(const std::string& path, off_t start, off_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  probe.l_start = start;
  probe.l_len = length;
  const bool held = ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

void require_plain_path(const std::string& path, const std::string& what) {
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) {
    fail(what + " must be a file path (not ':memory:' or a file: URI)");
  }
}

}  // namespace

bool sqlite_in_use(const std::string& db_path) {
  // SQLite's unix VFS: the -shm "dead man switch" byte is 128 (shared while a WAL connection is open);
  // the database's lock bytes start at the pending byte, 0x40000000 (pending, reserved, 510 shared).
  std::error_code ec;
  if (fs::exists(db_path + "-shm", ec) && locked_by_another(db_path + "-shm", 128, 1)) return true;
  return locked_by_another(db_path, 0x40000000, 512);
}

CopyReport backup_sqlite(const std::string& db_path, const std::string& to) {
  require_plain_path(db_path, "the database");
  require_plain_path(to, "the backup");
  std::error_code ec;
  if (!fs::is_regular_file(db_path, ec)) fail("no SQLite database at " + db_path);
  if (fs::exists(to, ec) || fs::is_symlink(to, ec)) fail(to + " exists; a backup never overwrites a file");
  // Said of the folder asked for, not of the temporary file the copy is first written to.
  if (const auto folder = parent_of(to); !fs::is_directory(folder, ec)) {
    fail("no folder " + folder + " for the backup " + to + " (make it first)");
  }
  // No CREATE: a mistyped path is an error, not a new empty database. Read-write so that a WAL left by a
  // crash can be recovered before reading.
  auto src = open_db(db_path, SQLITE_OPEN_READWRITE);
  if (!schema_version(src.get())) fail(db_path + " is not a GPUnex database (no schema_migrations)");
  TempFile temp(to);
  auto report = copy_database(src.get(), temp.path());
  src.reset();
  // link() never replaces: a file that appeared at `to` meanwhile is kept, and this backup refused.
  if (::link(temp.path().c_str(), to.c_str()) != 0) fail("cannot create " + to + ": " + std::strerror(errno));
  fsync_path(parent_of(to), O_RDONLY | O_DIRECTORY);
  return report;
}

CopyReport restore_sqlite(const std::string& from, const std::string& db_path, bool replace) {
  require_plain_path(from, "the backup");
  require_plain_path(db_path, "the database");
  std::error_code ec;
  if (!fs::is_regular_file(from, ec)) fail("no backup file at " + from);
  const bool exists = fs::exists(db_path, ec);
  if (exists && !replace) {
    fail(db_path + " exists; restore into a new path, or stop the server and pass --replace (the old database "
                   "is kept beside it)");
  }
  if (exists && fs::equivalent(from, db_path, ec)) fail("the backup and the database are the same file");
  if (exists && sqlite_in_use(db_path)) {
    fail(db_path + " is open in another process (a running server?): stop it before restoring over it");
  }
  auto src = open_db(from, SQLITE_OPEN_READONLY);
  check_intact(src.get(), from);
  const auto version = schema_version(src.get());
  if (!version) fail(from + " is not a GPUnex database (no schema_migrations)");
  const int known = migrations().empty() ? 0 : migrations().back().version;
  if (*version > known) {
    fail(from + " holds schema version " + std::to_string(*version) + ", newer than this program's " +
         std::to_string(known) + ": restore it with the gpunex-server that made it");
  }
  const auto dir = fs::path(parent_of(db_path));
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) fail("cannot create folder " + dir.string() + ": " + ec.message());
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  TempFile temp(db_path);
  auto report = copy_database(src.get(), temp.path());
  src.reset();
  if (exists) {
    // Checked again right before the move: a server that started meanwhile keeps its database.
    if (sqlite_in_use(db_path)) fail(db_path + " was opened by another process while restoring; nothing changed");
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    report.kept_old = db_path + ".before-restore-" + std::to_string(now);
    // Its -wal and -shm go with it: a WAL left beside the restored file would be replayed into it.
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      if (!fs::exists(db_path + suffix, ec)) continue;
      fs::rename(db_path + suffix, report.kept_old + suffix, ec);
      if (ec) fail("cannot move " + db_path + suffix + " aside: " + ec.message());
    }
  }
  if (::link(temp.path().c_str(), db_path.c_str()) != 0) {
    fail("cannot create " + db_path + ": " + std::strerror(errno));
  }
  fsync_path(dir.string(), O_RDONLY | O_DIRECTORY);
  return report;
}

}  // namespace gpunex::store
