#include "core/presentation/devicesheld.h"

#include "core/units.h"

namespace oomlens {

std::vector<std::string> devicesHeld(const SnapshotAnalysis& snapshot)
{
    std::vector<std::string> lines;
    std::vector<const DeviceAnalysis*> holding;
    for (const DeviceAnalysis& device : snapshot.devices) {
        // A device with an empty trace list and no segment held nothing worth a line.
        if (device.peakReservedBytes > 0 || device.peakAllocatedBytes > 0 || device.device == snapshot.primaryDevice)
            holding.push_back(&device);
    }
    if (holding.size() < 2)
        return lines;
    for (const DeviceAnalysis* held : holding) {
        const DeviceAnalysis& device = *held;
        std::string line = "device " + std::to_string(device.device);
        if (device.device == snapshot.primaryDevice)
            line += " (described)";
        line += ": peak " + formatBytes(device.peakAllocatedBytes) + " allocated, "
            + formatBytes(device.peakReservedBytes) + " reserved";
        if (!device.ooms.empty())
            line += ", " + std::to_string(device.ooms.size()) + " out-of-memory event"
                + (device.ooms.size() == 1 ? "" : "s");
        lines.push_back(std::move(line));
    }
    return lines;
}

} // namespace oomlens
