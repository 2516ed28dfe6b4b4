#pragma once
// The schedule a newly registered machine starts with: the availability its provider declared
// in the approved application (issue #14: an evenings-only applicant was listed 24/7 until they
// set a schedule again). Pure: no store, no clock.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/application.hpp"
#include "core/result.hpp"
#include "core/schedule.hpp"

namespace gpunex::core {

struct DefaultSchedule {
  Schedule schedule;
  std::optional<std::size_t> entry;  //!< the application's gpus[] entry it came from; none: 24/7
};

//! The availability of the first application entry whose model is one of `machine_models` (the
//! catalog ids of the machine's GPUs), else of the first entry; 24/7 in UTC when the form has
//! no entries. A declared schedule that no longer parses (a time zone gone from the OS
//! database) is an error naming the entry.
Result<DefaultSchedule> default_schedule(const ApplicationForm& form, const std::vector<std::string>& machine_models);

}  // namespace gpunex::core
