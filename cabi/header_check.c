// Compiled with the package: a declaration in safeput.h that disagrees with the
// function cgo exports is a conflicting-types error, so the header cannot drift.
#include "safeput.h"
#include "_cgo_export.h"
