#pragma once
// The one value both drivers refuse alike (STYLE §4: one store suite, every driver).

#include "store/store.hpp"

namespace gpunex::store {

//! A text parameter held a NUL byte. PostgreSQL text cannot hold one and libpq would cut the value at it
//! ("a@x.com\0junk" matching "a@x.com"), so both drivers refuse it rather than store or match something
//! else (answered 400; issue #19).
class NulInText : public StoreError {
 public:
  using StoreError::StoreError;
};

}  // namespace gpunex::store
