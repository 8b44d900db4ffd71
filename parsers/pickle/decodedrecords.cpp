#include "parsers/pickle/decodedrecords.h"

namespace oomlens::pickle {

std::string DecodedRecords::displayText(const Value& value) const
{
    switch (value.kind) {
    case Kind::Str:
        return std::string(textOf(value));
    case Kind::Int:
        return std::to_string(value.i);
    case Kind::Bool:
        return value.i ? "True" : "False";
    case Kind::None:
        return "None";
    case Kind::Float:
        return std::to_string(value.f);
    case Kind::Deferred:
        deferredValueUsed();
    default:
        return std::string("<") + kindName(value.kind) + ">";
    }
}

Annotation DecodedRecords::annotation(const std::vector<Value>& items) const
{
    Annotation a;
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
        const Value& key = items[i];
        const Value& value = items[i + 1];
        if (key.kind == Kind::Str && key.ref == KDevice)
            a.device = static_cast<int32_t>(integerField(&value, KDevice, "annotation"));
        else if (key.kind == Kind::Str && key.ref == KTimeUs)
            a.timeUs = integerField(&value, KTimeUs, "annotation");
        else
            a.fields.emplace_back(displayText(key), displayText(value));
    }
    return a;
}

void DecodedRecords::warnOnce(const std::string& text)
{
    if (warned.insert(text).second)
        warnings.push_back(text);
}

void deferredValueUsed()
{
    // Only a trace entry's frames can wait for the other half of a split list (makeEvent), and
    // only a fork's dict keys and string values can be asked for (resolveDeferred).
    throw DecodeError(
        ErrorKind::Unsupported, "a value stored by the other half of a split list is used before the split joins");
}

} // namespace oomlens::pickle
