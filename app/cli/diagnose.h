#pragma once

#include <QStringList>

namespace oomlens::cli {

// `oomlens diagnose [--full | --json] [--device N] [--rules FILE] INPUT...`; `arguments` excludes the
// program name and the command.
int runDiagnose(const QStringList& arguments);

} // namespace oomlens::cli
