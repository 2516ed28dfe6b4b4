#include "agent/state.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "util/crypto.hpp"

namespace gpunex::agent {

using core::Error;
using core::ErrorCode;

namespace {

Error io_error(const std::string& what, const std::string& path, int err) {
  return Error::make(ErrorCode::internal, what + " " + path + ": " + std::strerror(err));
}

core::Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read", path, errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

core::Status write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot write", tmp, errno);
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return io_error("cannot write", tmp, err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return io_error("cannot sync", tmp, err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return io_error("cannot rename to", path, errno);
  return core::ok_status();
}

core::Result<AgentState> AgentState::open(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    return Error::make(ErrorCode::internal, "cannot create data folder " + data_dir + ": " + ec.message() +
                                                " (choose another with --data-dir)");
  }
  AgentState st;
  st.data_dir_ = data_dir;
  const std::string id_path = data_dir + "/identity.json";
  if (std::filesystem::exists(id_path, ec)) {
    auto text = read_file(id_path);
    if (!text) return std::move(text).error();
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("fingerprint") || !j["fingerprint"].is_string() ||
        j["fingerprint"].get<std::string>().empty()) {
      return Error::make(ErrorCode::internal, id_path +
                                                  " is damaged (no fingerprint); restore it from a backup, or remove "
                                                  "it to register this host as a new machine");
    }
    st.identity_.fingerprint = j["fingerprint"].get<std::string>();
    if (j.contains("machine_id") && j["machine_id"].is_string()) st.identity_.machine_id = j["machine_id"];
    if (j.contains("server_url") && j["server_url"].is_string()) st.identity_.server_url = j["server_url"];
  } else {
    util::init_crypto();
    st.identity_.fingerprint = "mfp_" + util::random_token(24);
    if (auto s = st.save_identity(); !s) return std::move(s).error();
  }
  const std::string seq_path = data_dir + "/seq";
  if (std::filesystem::exists(seq_path, ec)) {
    auto text = read_file(seq_path);
    if (!text) return std::move(text).error();
    std::string t = *text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    auto [ptr, err] = std::from_chars(t.data(), t.data() + t.size(), st.seq_);
    if (err != std::errc() || ptr != t.data() + t.size()) {
      return Error::make(ErrorCode::internal, seq_path + " is damaged ('" + t + "' is not a sequence number)");
    }
  }
  return st;
}

core::Status AgentState::save_identity() const {
  nlohmann::json j = {{"fingerprint", identity_.fingerprint},
                      {"machine_id", identity_.machine_id},
                      {"server_url", identity_.server_url}};
  return write_file_atomic(data_dir_ + "/identity.json", j.dump(2) + "\n");
}

core::Status AgentState::set_machine_id(const std::string& machine_id, const std::string& server_url) {
  if (identity_.machine_id == machine_id && identity_.server_url == server_url) return core::ok_status();
  identity_.machine_id = machine_id;
  identity_.server_url = server_url;
  return save_identity();
}

core::Result<std::uint64_t> AgentState::next_seq() {
  const std::uint64_t next = seq_ + 1;
  if (auto s = write_file_atomic(data_dir_ + "/seq", std::to_string(next) + "\n"); !s) return std::move(s).error();
  seq_ = next;
  return next;
}

}  // namespace gpunex::agent
