#include "agent/spool.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/state.hpp"

namespace gpunex::agent {

using core::Error;
using core::ErrorCode;
namespace fs = std::filesystem;

namespace {

// File name: <seq, 20 digits>.<t|e>.json, so a directory listing sorts in sequence order.
std::string file_name(std::uint64_t seq, SpoolKind kind) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%020llu.%c.json", static_cast<unsigned long long>(seq),
                kind == SpoolKind::telemetry ? 't' : 'e');
  return buf;
}

bool parse_name(const std::string& name, std::uint64_t& seq, SpoolKind& kind) {
  if (name.size() != 27 || name.substr(20, 1) != "." || name.substr(22) != ".json") return false;
  auto [p, ec] = std::from_chars(name.data(), name.data() + 20, seq);
  if (ec != std::errc() || p != name.data() + 20) return false;
  if (name[21] == 't') {
    kind = SpoolKind::telemetry;
  } else if (name[21] == 'e') {
    kind = SpoolKind::event;
  } else {
    return false;
  }
  return true;
}

}  // namespace

core::Result<Spool> Spool::open(std::string dir, SpoolLimits limits) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::make(ErrorCode::internal, "cannot create spool folder " + dir + ": " + ec.message());
  Spool s;
  s.dir_ = std::move(dir);
  s.limits_ = limits;
  for (const auto& de : fs::directory_iterator(s.dir_, ec)) {
    const std::string name = de.path().filename().string();
    std::uint64_t seq = 0;
    SpoolKind kind{};
    if (!de.is_regular_file() || !parse_name(name, seq, kind)) {
      if (name.ends_with(".tmp")) fs::remove(de.path(), ec);  // a write a crash interrupted
      continue;
    }
    const std::uint64_t size = de.file_size(ec);
    s.index_[seq] = Meta{kind, size, de.path().string()};
    s.bytes_ += size;
  }
  if (ec) return Error::make(ErrorCode::internal, "cannot list spool folder " + s.dir_ + ": " + ec.message());
  return s;
}

core::Result<std::size_t> Spool::push(const SpoolEntry& e) {
  const nlohmann::json envelope = {{"seq", e.seq}, {"endpoint", e.endpoint}, {"body", e.body}};
  const std::string text = envelope.dump();
  const std::string path = dir_ + "/" + file_name(e.seq, e.kind);
  if (auto s = write_file_atomic(path, text); !s) return std::move(s).error();
  if (auto it = index_.find(e.seq); it != index_.end()) bytes_ -= it->second.bytes;
  index_[e.seq] = Meta{e.kind, text.size(), path};
  bytes_ += text.size();

  std::size_t dropped = 0;
  auto over = [&] { return index_.size() > limits_.max_entries || bytes_ > limits_.max_bytes; };
  auto it = index_.begin();
  while (over()) {
    while (it != index_.end() && it->second.kind != SpoolKind::telemetry) ++it;
    if (it == index_.end()) break;  // only events left: kept even past the limit
    std::error_code ec;
    fs::remove(it->second.file, ec);
    bytes_ -= it->second.bytes;
    it = index_.erase(it);
    ++dropped;
  }
  dropped_ += dropped;
  return dropped;
}

core::Result<std::optional<SpoolEntry>> Spool::front() const {
  if (index_.empty()) return std::optional<SpoolEntry>();
  const auto& [seq, meta] = *index_.begin();
  std::ifstream in(meta.file, std::ios::binary);
  if (!in)
    return Error::make(ErrorCode::internal, "cannot read spooled message " + meta.file + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || !j.contains("body") || !j["body"].is_string() || !j.contains("endpoint") ||
      !j["endpoint"].is_string()) {
    return Error::make(ErrorCode::internal, "spooled message " + meta.file + " is damaged").with_code("spool_damaged");
  }
  return std::optional<SpoolEntry>(
      SpoolEntry{seq, meta.kind, j["endpoint"].get<std::string>(), j["body"].get<std::string>()});
}

core::Status Spool::remove(std::uint64_t seq) {
  auto it = index_.find(seq);
  if (it == index_.end()) return core::ok_status();
  std::error_code ec;
  fs::remove(it->second.file, ec);
  if (ec) return Error::make(ErrorCode::internal, "cannot remove " + it->second.file + ": " + ec.message());
  bytes_ -= it->second.bytes;
  index_.erase(it);
  return core::ok_status();
}

std::size_t Spool::count(SpoolKind kind) const {
  std::size_t n = 0;
  for (const auto& [seq, meta] : index_) n += meta.kind == kind ? 1 : 0;
  return n;
}

}  // namespace gpunex::agent
