#pragma once
// What an applicant declared, counted per model: the one reading that the review queue, the
// application page and the decision mail all show.
#include <cstdint>
#include <string>
#include <vector>

#include "core/application.hpp"

namespace gpunex::core {

struct DeclaredModel {
  std::string model;  //!< catalog id, or "other: <free text>"
  std::int64_t count = 0;
};

//! The form's GPU entries summed per model, in the order each model first appears.
std::vector<DeclaredModel> declared_gpus(const ApplicationForm& form);

//! "2 × L4, 1 × L40S": each model with its own count.
std::string declared_gpus_text(const std::vector<DeclaredModel>& gpus);

}  // namespace gpunex::core
