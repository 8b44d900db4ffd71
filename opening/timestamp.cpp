#include "opening/timestamp.h"

#include <chrono>
#include <cstdio>

namespace oomlens {

std::string utcTimestampNow()
{
    using namespace std::chrono;
    const sys_seconds now = floor<seconds>(system_clock::now());
    const sys_days day = floor<days>(now);
    const year_month_day date(day);
    const hh_mm_ss time(now - day);
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(date.year()),
        static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
        static_cast<int>(time.minutes().count()), static_cast<int>(time.seconds().count()));
    return text;
}

} // namespace oomlens
