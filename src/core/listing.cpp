#include "core/listing.hpp"

namespace gpunex::core {

ListingChange listing_change(std::optional<bool> was_listed, bool passes) {
  if (!passes && was_listed.value_or(true)) return ListingChange::delisted;
  if (passes && was_listed && !*was_listed) return ListingChange::relisted;
  return ListingChange::none;
}

bench::Finding unknown_model_finding() {
  return bench::Finding{"model", "GPU model", 0, 0, "", "unknown_model",
                        "This GPU is not a catalog model, so it has no reference figures: ask "
                        "support to add the model to the catalog."};
}

}  // namespace gpunex::core
