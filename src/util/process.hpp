#pragma once
// Running a program and reading what it printed, without a shell: the agent's network guard runs
// iptables with it.

#include <chrono>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpunex::util {

struct ProcessResult {
  int exit_code = -1;  // the program's exit status; 128 + the signal when a signal ended it
  std::string out;     // what it wrote on stdout (at most 1 MiB)
  std::string err;     // and on stderr (at most 1 MiB)
};

//! Runs `argv[0]` (looked up on PATH) with `argv`, stdin from /dev/null, and waits for it. An error
//! when `argv` is empty, the program cannot be started, or it runs past `timeout` (it is killed).
core::Result<ProcessResult> run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

}  // namespace gpunex::util
