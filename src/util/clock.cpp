#include "util/clock.hpp"

#include <chrono>

namespace gpunex::util {

std::int64_t SystemClock::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace gpunex::util
