# The dashboard's libraries from npm (web/package.json, pinned by web/package-lock.json and installed
# into web/node_modules by scripts/deps.sh): the files the server serves, relative to web/. Each is
# served at its file name (/uPlot.iife.min.js). Read by src/CMakeLists.txt and embed_web.cmake.
set(GPUNEX_WEB_VENDOR
  node_modules/uplot/dist/uPlot.iife.min.js
  node_modules/uplot/dist/uPlot.min.css
  # The API reference page (api-docs.html): Swagger UI's standalone bundle and its style sheet.
  node_modules/swagger-ui-dist/swagger-ui-bundle.js
  node_modules/swagger-ui-dist/swagger-ui.css
)
