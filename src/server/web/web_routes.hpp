#pragma once
// The dashboard's routes: "/" and each embedded asset's path (web.hpp), or with
// --web-dir the files of that folder read per request.

#include "server/platform/request_pipeline.hpp"

namespace gpunex::server {

//! Adds the dashboard's routes to `app`; main.cpp calls it after api/'s make_app.
void register_web(App& app);

}  // namespace gpunex::server
