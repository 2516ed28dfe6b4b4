// Preloaded before libfaketime by scripts/moved-clock.sh: timerfd_settime straight to the kernel.
//
// libfaketime (0.9.10, Debian bookworm) rewrites every absolute timerfd_settime as if the timer ran on
// the faked wall clock, subtracting the offset. It cannot know the descriptor's clock, and with
// FAKETIME_DONT_FAKE_MONOTONIC the CLOCK_MONOTONIC timers Boost.Asio arms are real: the time it passes
// comes out negative and the call fails with EINVAL. Asio arms its timerfd with an absolute 1 ns
// exactly when the earliest timer is already due, so under the moved clock a timer waited on after its
// deadline never fired (a session's header timeout among them: CI21's
// ServerTest.HalfHeaderIsCutOffAfterHeaderTimeout, whose trickled byte arrived just after the
// deadline). The program under test reads the moved wall clock through clock_gettime as before; only its
// timers keep the real monotonic clock, as FAKETIME_DONT_FAKE_MONOTONIC intends.
// tests/unit/http_test.cpp's AsioTimer.AlreadyDueFires fails under the moved clock without it.
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

extern "C" int timerfd_settime(int fd, int flags, const struct itimerspec* new_value, struct itimerspec* old_value) {
  return static_cast<int>(::syscall(SYS_timerfd_settime, fd, flags, new_value, old_value));
}
