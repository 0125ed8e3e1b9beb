#pragma once
// A test-only backend, `null`: outputs of the right shapes filled with one value, marked not
// computed. It exists to show (and keep tested) what adding a backend takes
// (docs/extending.md, "A backend"): this folder, and one registration call.

namespace dpushard::testing {

// Adds "null" to the backend registry (dpushard/exec/backend.hpp). Idempotent.
void register_null_backend();

}  // namespace dpushard::testing
