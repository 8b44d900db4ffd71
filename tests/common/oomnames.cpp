#include "common/oomnames.h"

#include <QTest>

#include <string>

namespace oomlens {

char* toString(Backend backend)
{
    return QTest::toString(std::string(backendName(backend)).c_str());
}

char* toString(OomTemplate id)
{
    return QTest::toString(std::string(oomTemplateName(id)).c_str());
}

char* toString(AllocatorBackend backend)
{
    return QTest::toString(std::string(allocatorBackendName(backend)).c_str());
}

} // namespace oomlens
