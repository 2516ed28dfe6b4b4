// The driver-independent half of the store: row getters, open_store(),
// migrations and leases.

#include "store/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "store/driver_util.hpp"
#include "store/migrations.hpp"
#include "store/sqlite/sqlite_store.hpp"
#ifdef GPUNEX_WITH_POSTGRES
#include "store/postgres/postgres_store.hpp"
#endif

namespace gpunex::store {

namespace {

// When a migration was applied: an audit fact of the real world, not a rule the server runs by its
// (possibly simulated) clock, so it reads the system clock.
std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void throw_conversion(std::size_t i, std::string_view want, std::string_view got) {
  throw StoreError("store: column " + std::to_string(i) + " is not " + std::string(want) + " (" +
                   std::string(got) + ")");
}

std::string_view kind_name(const Value& v) {
  switch (v.index()) {
    case 0: return "null";
    case 1: return "an integer";
    case 2: return "a float";
    default: return "text";
  }
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

// ---- Row ----

bool Row::is_null(std::size_t i) const {
  if (i >= values_.size()) throw StoreError("store: column " + std::to_string(i) + " out of range");
  return std::holds_alternative<std::nullptr_t>(values_[i]);
}

std::int64_t Row::i64(std::size_t i) const {
  if (is_null(i)) throw_conversion(i, "an integer", "null");
  const Value& v = values_[i];
  if (const auto* n = std::get_if<std::int64_t>(&v)) return *n;
  if (const auto* d = std::get_if<double>(&v)) {
    // Exactly integral doubles only (a PostgreSQL numeric, or an integer SQLite stored as REAL).
    if (std::isfinite(*d) && std::trunc(*d) == *d && *d >= -9.2233720368547758e18 && *d < 9.2233720368547758e18) {
      return static_cast<std::int64_t>(*d);
    }
    throw_conversion(i, "an integer", std::to_string(*d));
  }
  const auto& s = std::get<std::string>(v);
  std::int64_t out = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) throw_conversion(i, "an integer", "text '" + s.substr(0, 40) + "'");
  return out;
}

double Row::f64(std::size_t i) const {
  if (is_null(i)) throw_conversion(i, "a number", "null");
  const Value& v = values_[i];
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* n = std::get_if<std::int64_t>(&v)) return static_cast<double>(*n);
  const auto& s = std::get<std::string>(v);
  double out = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) throw_conversion(i, "a number", "text '" + s.substr(0, 40) + "'");
  return out;
}

std::string Row::str(std::size_t i) const {
  if (is_null(i)) throw_conversion(i, "text", "null");
  const Value& v = values_[i];
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* n = std::get_if<std::int64_t>(&v)) return std::to_string(*n);
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::get<double>(v));
  if (ec != std::errc()) throw_conversion(i, "text", kind_name(v));
  return std::string(buf, end);
}

std::optional<std::int64_t> Row::opt_i64(std::size_t i) const {
  if (is_null(i)) return std::nullopt;
  return i64(i);
}

std::optional<std::string> Row::opt_str(std::size_t i) const {
  if (is_null(i)) return std::nullopt;
  return str(i);
}

std::optional<double> Row::opt_f64(std::size_t i) const {
  if (is_null(i)) return std::nullopt;
  return f64(i);
}

// ---- Tx ----

std::string in_list(std::size_t n) {
  if (n == 0) return " IN (NULL)";
  std::string s = " IN (?";
  for (std::size_t i = 1; i < n; ++i) s += ", ?";
  return s + ")";
}

std::optional<Row> Tx::query_one(std::string_view sql, const Params& params) {
  auto rows = query(sql, params);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

// ---- driver helpers ----

namespace detail {

std::string first_keyword(std::string_view sql) {
  std::size_t i = 0;
  while (i < sql.size()) {
    unsigned char c = static_cast<unsigned char>(sql[i]);
    if (std::isspace(c) || c == '(') {
      ++i;
    } else if (sql.substr(i, 2) == "--") {
      auto nl = sql.find('\n', i);
      i = nl == std::string_view::npos ? sql.size() : nl + 1;
    } else if (sql.substr(i, 2) == "/*") {
      auto close = sql.find("*/", i + 2);
      i = close == std::string_view::npos ? sql.size() : close + 2;
    } else {
      break;
    }
  }
  std::string out;
  while (i < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i]))) {
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(sql[i])));
    ++i;
  }
  return out.empty() ? std::string("other") : out;
}

std::string sql_excerpt(std::string_view sql) {
  std::string out;
  for (char c : sql) {
    if (out.size() >= 80) break;
    char norm = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (norm == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += norm;
  }
  return out;
}

StatementTimer::~StatementTimer() {
  if (!observer_) return;
  try {
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
    observer_(first_keyword(sql_), elapsed.count());
  } catch (...) {
    // An observer (metrics) must never turn a statement into a failure.
  }
}

}  // namespace detail

// ---- open_store ----

namespace {

//! The database holds password hashes, sessions and keys: a folder the store creates is 0700, and the
//! database with its -wal and -shm (SQLite gives those the database's mode) is 0600, an older 0644 one
//! included.
void restrict_sqlite_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) throw StoreError("store: cannot create folder " + parent.string() + ": " + ec.message());
    fs::permissions(parent, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw StoreError("store: cannot open " + path + ": " + std::strerror(errno));
  const bool restricted = ::fchmod(fd, 0600) == 0;
  ::close(fd);
  if (!restricted) throw StoreError("store: cannot make " + path + " private (0600): " + std::strerror(errno));
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (fs::exists(path + suffix, ec)) fs::permissions(path + suffix, fs::perms::owner_read | fs::perms::owner_write,
                                                       fs::perm_options::replace, ec);
  }
}

}  // namespace

std::unique_ptr<Store> open_store(const std::string& url, const StoreOptions& options) {
  if (starts_with(url, "sqlite:")) {
    std::string path = url.substr(7);
    if (path.empty()) throw StoreError("store: empty SQLite path in '" + url + "'");
    if (!options.create_missing && path != ":memory:" && !starts_with(path, "file:") &&
        !std::filesystem::exists(path)) {
      throw StoreError("no SQLite database at " + path + " (the server makes it at its first start: is --db right?)");
    }
    if (path != ":memory:" && !starts_with(path, "file:")) restrict_sqlite_files(path);
    return open_sqlite_store(path, options);
  }
  if (starts_with(url, "postgresql://") || starts_with(url, "postgres://")) {
#ifdef GPUNEX_WITH_POSTGRES
    return open_postgres_store(url, options);
#else
    throw StoreError("store: this build has no PostgreSQL driver (built with GPUNEX_WITH_POSTGRES=OFF)");
#endif
  }
  // Only the scheme is echoed: the rest of a URL may hold a password.
  throw StoreError("store: unknown database URL scheme '" + url.substr(0, url.find(':')) +
                   "' (expected sqlite:PATH or postgresql://...)");
}

// ---- migrations ----

int migrate(Store& store) { return migrate(store, migrations()); }

int migrate(Store& store, const std::vector<Migration>& list) {
  return store.transact([&](Tx& tx) {
    if (tx.dialect() == Dialect::postgres) {
      // Serialises replicas starting together; released at commit or rollback.
      tx.query("SELECT pg_advisory_xact_lock(7283901460)");
    }
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version BIGINT PRIMARY KEY, name TEXT, applied_at BIGINT)");
    auto row = tx.query_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    std::int64_t current = row ? row->i64(0) : 0;
    for (const auto& m : list) {
      if (m.version <= current) continue;
      tx.exec_script(tx.dialect() == Dialect::postgres && !m.postgres_sql.empty() ? m.postgres_sql : m.sql);
      tx.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
              {std::int64_t{m.version}, m.name, wall_clock_ms()});
      current = m.version;
    }
    return static_cast<int>(current);
  });
}


// ---- changes ----

void notify_change(Tx& tx, std::string_view topic) {
  if (tx.dialect() != Dialect::postgres) return;
  tx.query("SELECT pg_notify(?, ?)", {std::string(kChangeChannel), std::string(topic)});
}

// ---- leases ----

bool try_take_lease(Tx& tx, std::string_view name, std::string_view holder, std::int64_t now_ms,
                    std::int64_t ttl_ms) {
  auto changed = tx.exec(
      "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) "
      "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "
      "WHERE leases.expires_at <= ? OR leases.holder = excluded.holder",
      {std::string(name), std::string(holder), now_ms + ttl_ms, now_ms});
  return changed > 0;
}

void release_lease(Tx& tx, std::string_view name, std::string_view holder) {
  tx.exec("DELETE FROM leases WHERE name = ? AND holder = ?", {std::string(name), std::string(holder)});
}

}  // namespace gpunex::store
