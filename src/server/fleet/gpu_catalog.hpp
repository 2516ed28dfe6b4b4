#pragma once
// Moved to server/onboarding/gpu_catalog.hpp (onboarding grows the catalog; fleet and market read
// it). Kept only for server/main.cpp and server/api/provider_api.cpp until their includes change;
// delete it then.

#include "server/onboarding/gpu_catalog.hpp"
