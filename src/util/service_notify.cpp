#include "util/service_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace gpunex::util {

bool notify_service_manager(std::string_view state) {
  const char* where = std::getenv("NOTIFY_SOCKET");
  if (where == nullptr) return false;
  const std::string path(where);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() < 2 || path.size() >= sizeof addr.sun_path || (path[0] != '/' && path[0] != '@')) return false;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (path[0] == '@') addr.sun_path[0] = '\0';  // an abstract socket
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const auto sent =
      ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  ::close(fd);
  return sent == static_cast<ssize_t>(state.size());
}

}  // namespace gpunex::util
