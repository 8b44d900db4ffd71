#pragma once

// No Qt header may be included here, directly or indirectly: Python's headers define `slots`.

#include "parsers/pickle/picklevalue.h"

#include <atomic>
#include <string>
#include <string_view>

namespace oomlens::python {

struct PythonUnpickleOptions
{
    const std::atomic_bool* cancel = nullptr;
    // Run the opcode safety scan before CPython sees the bytes. Tests turn it off to prove the
    // restricted unpickler refuses globals on its own.
    bool prescan = true;
};

// True when the embedded interpreter could be started (once per process); otherwise `why` says
// what failed.
bool pythonAvailable(std::string* why = nullptr);

// Unpickles `data` with CPython's own unpickler, restricted so that it resolves no global and
// no persistent id, then walks the resulting objects into `builder` (the same builder the native
// decoder feeds). Safe to call from any thread; takes the GIL for the duration.
// Throws pickle::DecodeError.
pickle::Value pythonUnpickle(
    std::string_view data, pickle::ValueBuilder& builder, const PythonUnpickleOptions& options = {});

} // namespace oomlens::python
