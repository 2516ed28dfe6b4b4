#include "util/clock.hpp"

#include <chrono>

namespace gpunex::util {

std::int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t SystemClock::now_ms() const {
  return system_now_ms();
}

}  // namespace gpunex::util
