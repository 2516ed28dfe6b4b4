// The API reference page (/api-docs.html): Swagger UI (npm swagger-ui-dist, pinned by
// web/package-lock.json and embedded in the server, like uPlot) renders the server's own
// /v1/openapi.json. Everything comes from this server: no CDN, no inline script or style (the
// server's Content-Security-Policy allows neither), no call to Swagger's online validator.
// A reference, not a console: "Try it out" is off (requests from here would need the CSRF header).
'use strict';

window.addEventListener('DOMContentLoaded', () => {
  const target = document.getElementById('api-reference');
  if (typeof window.SwaggerUIBundle !== 'function') {
    target.textContent = 'The API reference could not load its renderer (/swagger-ui-bundle.js). The document itself is at /v1/openapi.json.';
    return;
  }
  window.SwaggerUIBundle({
    url: '/v1/openapi.json',
    domNode: target,
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    supportedSubmitMethods: [],
    validatorUrl: null,
  });
});
