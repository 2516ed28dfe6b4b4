// The market pages of the dashboard; they register into app.js's `pages`.
