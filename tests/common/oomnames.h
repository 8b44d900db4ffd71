#pragma once

#include "core/textinputs.h"

namespace oomlens {

// QCOMPARE prints backends and message templates by the names the JSON uses (found by ADL).
char* toString(Backend backend);
char* toString(OomTemplate id);
char* toString(AllocatorBackend backend);

} // namespace oomlens
