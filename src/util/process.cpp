#include "util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

extern char** environ;  // NOLINT: POSIX's own declaration, what posix_spawnp passes on

namespace gpunex::util {

namespace {

using core::Error;
using core::ErrorCode;

constexpr std::size_t kMaxOutput = 1 << 20;

// Closes what it holds when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

}  // namespace

core::Result<ProcessResult> run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  if (argv.empty()) return Error::make(ErrorCode::bad_request, "no program to run");
  const std::string& program = argv.front();
  std::array<Fd, 2> out, err;  // [0] read end, [1] write end
  for (auto* pipe : {&out, &err}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return Error::make(ErrorCode::internal, "pipe: " + std::string(std::strerror(errno)));
    (*pipe)[0].fd = fds[0];
    (*pipe)[1].fd = fds[1];
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1].fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err[1].fd, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: exec's own signature
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return Error::make(ErrorCode::unavailable, "cannot run " + program + ": " + std::strerror(spawned));
  }
  out[1].reset();
  err[1].reset();

  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (out[0].fd >= 0 || err[0].fd >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    std::array<pollfd, 2> fds{{{out[0].fd, POLLIN, 0}, {err[0].fd, POLLIN, 0}}};
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const auto n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        (i == 0 ? out : err)[0].reset();
        continue;
      }
      std::string& text = i == 0 ? result.out : result.err;
      text.append(buf, std::min(static_cast<std::size_t>(n), kMaxOutput - std::min(kMaxOutput, text.size())));
    }
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Error::make(ErrorCode::unavailable,
                       program + " did not finish within " + std::to_string(timeout.count()) + " ms");
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace gpunex::util
