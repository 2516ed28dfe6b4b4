// TODO: implemented in the foundation issue
