#include "core/report/reportbuilder.h"

namespace oomlens::report {

// The comparison section; written only when ReportOptions::comparison is set.
void ReportBuilder::writeComparison()
{
    if (!m_options.comparison)
        return;
}

} // namespace oomlens::report
