#include "app/cli/inputs.h"

#include "parsers/inputloader.h"

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

namespace oomlens::cli {

namespace {

std::string readStdin()
{
    std::freopen(nullptr, "rb", stdin);
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

} // namespace

int loadInputs(const QStringList& paths, Case& into)
{
    int failures = 0;
    for (const QString& path : paths) {
        const size_t before = into.inputs.size();
        if (path == QLatin1String("-"))
            addInput(into, "-", readStdin());
        else
            addFile(into, path.toStdString());
        for (size_t i = before; i < into.inputs.size(); ++i) {
            if (into.inputs[i].error) {
                // A broken capture sidecar is a warning: the snapshot beside it was still read.
                if (into.inputs[i].kind != InputKind::Sidecar)
                    ++failures;
                std::fprintf(stderr, "oomlens: %s: %s\n", into.inputs[i].path.c_str(), into.inputs[i].error->c_str());
            }
        }
    }
    return failures;
}

} // namespace oomlens::cli
