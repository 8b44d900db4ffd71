#include "core/report/reportbuilder.h"

namespace oomlens::report {

// The job section; written only when ReportOptions::job is set.
void ReportBuilder::writeJob()
{
    if (!m_options.job)
        return;
}

} // namespace oomlens::report
