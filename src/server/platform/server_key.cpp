#include "server/platform/server_key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

core::Error key_error(const std::string& path, const std::string& what) {
  return core::Error::make(core::ErrorCode::internal, "server key " + path + ": " + what);
}

//! The file's text when it exists; an error when it exists but cannot be read or is not a regular file.
core::Result<std::optional<std::string>> read_key(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>{};
    return key_error(path, std::strerror(errno));
  }
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  // An older or hand-made file readable by others is made the owner's alone.
  if (ok && (st.st_mode & 077) != 0) ok = ::fchmod(fd, 0600) == 0;
  char buf[256];
  for (ssize_t n = 0; ok && (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) ok = false;
    else text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (!ok) return key_error(path, "not a readable regular file of this user");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.size() < 32) return key_error(path, "holds fewer than 32 characters");
  return std::optional<std::string>{text};
}

}  // namespace

core::Result<std::string> load_or_create_server_key(const std::string& data_dir) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(data_dir) / "server.key").string();
  std::error_code ec;
  if (!fs::is_directory(data_dir, ec)) {
    if (fs::create_directories(data_dir, ec); ec) {
      return core::Error::make(core::ErrorCode::internal,
                               "data_dir '" + data_dir + "': cannot make it: " + ec.message());
    }
    fs::permissions(data_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  auto existing = read_key(path);
  if (!existing) return std::move(existing).error();
  if (*existing) return **existing;
  // Written whole under a temporary name, then linked into place: a second server starting on the same
  // folder either makes it first or reads the finished file, never a half-written one.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return key_error(tmp, std::strerror(errno));
  const std::string key = util::random_token(32) + "\n";
  const bool written = ::fchmod(fd, 0600) == 0 &&
                       ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
  ::close(fd);
  const bool linked = written && (::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST);
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (!linked) return key_error(path, std::strerror(written ? link_errno : EIO));
  auto made = read_key(path);
  if (!made) return std::move(made).error();
  if (!*made) return key_error(path, "vanished after it was made");
  return **made;
}

namespace {

constexpr const char* kSecretFact = "server_secret_fingerprint";

std::string fingerprint(const std::string& secret) {
  return util::secret_hash_hex("gpunex server secret fingerprint v1", secret);
}

}  // namespace

core::Status check_server_secret(store::Store& store, const std::string& secret, std::int64_t now_ms) {
  const std::string mine = fingerprint(secret);
  const auto recorded = store.transact([&](store::Tx& tx) {
    platform_repo::record_server_fact_if_absent(tx, kSecretFact, mine, now_ms);
    return *platform_repo::find_server_fact(tx, kSecretFact);
  });
  if (util::equal_constant_time(recorded.value, mine)) return core::ok_status();
  return core::Error::make(
      core::ErrorCode::invalid_field,
      "server_secret: this database's servers use another server_secret (recorded " +
          util::rfc3339(recorded.recorded_at) +
          "). Every server on one database needs the same one: the approval key one server seals until its "
          "provider shows it, another opens. Give this server the same secret "
          "(GPUNEX_SERVER_SECRET, or the same <data_dir>/server.key); if that secret is lost for good, "
          "`gpunex-server admin adopt-server-secret` makes this one the database's (approval keys not yet "
          "shown can then no longer be shown: their providers rotate them)",
      "server_secret");
}

void adopt_server_secret(store::Store& store, const std::string& secret, std::int64_t now_ms) {
  store.transact(
      [&](store::Tx& tx) { platform_repo::replace_server_fact(tx, kSecretFact, fingerprint(secret), now_ms); });
}

}  // namespace gpunex::server
