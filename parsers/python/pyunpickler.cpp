#include "parsers/python/pyunpickler.h"
