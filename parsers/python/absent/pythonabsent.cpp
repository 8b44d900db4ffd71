// The embedded-Python decoder's entry points in a build without Python (OOMLENS_EMBED_PYTHON=OFF,
// the portable static executable): nothing to start, so the native decoder's answer stands.

#include "parsers/python/pyunpickler.h"

namespace oomlens::python {

namespace {

const char* const absentReason = "this build has no embedded-Python decoder (the desktop build has one)";

} // namespace

bool pythonAvailable(std::string* why)
{
    if (why)
        *why = absentReason;
    return false;
}

pickle::Value pythonUnpickle(std::string_view, pickle::ValueBuilder&, const PythonUnpickleOptions&)
{
    throw pickle::DecodeError(pickle::ErrorKind::Unsupported, absentReason);
}

} // namespace oomlens::python
