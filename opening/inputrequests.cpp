#include "opening/inputrequests.h"

#include "opening/jobfiles.h"
#include "parsers/inputfile.h"

#include <algorithm>

namespace oomlens {

LoadRequest requestFor(const std::string& path)
{
    if (path != "-")
        return LoadRequest::file(path);
    std::string error;
    if (std::optional<std::string> text = readStandardInput(&error))
        return LoadRequest::pasted(std::move(*text), path);
    return LoadRequest::unreadable(path, error);
}

std::vector<LoadRequest> requestsFor(const std::vector<std::string>& given)
{
    std::vector<LoadRequest> requests;
    for (const std::string& path : expandFolders(given)) {
        LoadRequest request = requestFor(path);
        request.inFolder = request.isFile() && std::find(given.begin(), given.end(), path) == given.end();
        requests.push_back(std::move(request));
    }
    return requests;
}

} // namespace oomlens
