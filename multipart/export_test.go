package multipart

// For the external tests, which check the planner against the rules on a real store.
var ValidateLayout = validateLayout
