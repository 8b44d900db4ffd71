#include "parsers/pickle/jsonvaluereader.h"

#include "parsers/text/textlines.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace oomlens::pickle {

namespace {

constexpr size_t maxDepth = 10000;

class SaxBuilder
{
public:
    SaxBuilder(ValueBuilder& builder, const std::atomic_bool* cancel)
        : m_builder(builder)
        , m_cancel(cancel)
    { }

    bool null() { return deliver(Value::none()); }
    bool boolean(bool b) { return deliver(Value::boolean(b)); }
    bool number_integer(int64_t n) { return deliver(Value::integer(n)); }
    // Values up to 2^64-1 keep their bit pattern, as in the pickle decoders.
    bool number_unsigned(uint64_t n) { return deliver(Value::integer(static_cast<int64_t>(n))); }
    bool number_float(double d, const std::string&) { return deliver(Value::real(d)); }
    bool string(std::string& s) { return deliver(m_builder.text(s)); }
    bool binary(nlohmann::json::binary_t&) { return deliver(Value::none()); }
    bool start_object(size_t) { return openContainer(Kind::Dict); }
    bool key(std::string& k)
    {
        m_open.back().key = m_builder.text(k);
        return true;
    }
    bool end_object() { return closeContainer(); }
    bool start_array(size_t) { return openContainer(Kind::List); }
    bool end_array() { return closeContainer(); }
    bool parse_error(size_t position, const std::string&, const nlohmann::json::exception& e)
    {
        std::string what = e.what();
        // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 2: ".
        if (const auto colon = what.find(": "); colon != std::string::npos)
            what = what.substr(colon + 2);
        // Its "last read: '…'" quotes the input's bytes, which may not be UTF-8: the error goes into JSON.
        what = text::sanitizedUtf8(what);
        throw DecodeError(ErrorKind::Format, "not valid JSON at byte " + std::to_string(position) + ": " + what);
    }

    Value root() const { return m_root; }

private:
    struct Open
    {
        uint32_t handle;
        Kind kind;
        Value key;
    };

    bool openContainer(Kind kind)
    {
        if (m_open.size() >= maxDepth)
            throw DecodeError(ErrorKind::Format, "JSON nested deeper than " + std::to_string(maxDepth) + " levels");
        m_open.push_back({ m_builder.open(kind), kind, {} });
        return true;
    }

    bool closeContainer()
    {
        const Open open = m_open.back();
        m_open.pop_back();
        return deliver(m_builder.close(open.handle));
    }

    bool deliver(const Value& value)
    {
        if ((++m_count & 0xffff) == 0 && m_cancel && m_cancel->load(std::memory_order_relaxed))
            throw DecodeError(ErrorKind::Cancelled, "cancelled");
        if (m_open.empty()) {
            m_root = value;
        } else if (m_open.back().kind == Kind::Dict) {
            m_builder.setItem(m_open.back().handle, m_open.back().key, value);
        } else {
            m_builder.append(m_open.back().handle, value);
        }
        return true;
    }

    ValueBuilder& m_builder;
    const std::atomic_bool* m_cancel;
    std::vector<Open> m_open;
    Value m_root;
    uint64_t m_count = 0;
};

} // namespace

Value readJsonValue(std::string_view text, ValueBuilder& builder, const std::atomic_bool* cancel)
{
    SaxBuilder sax(builder, cancel);
    nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
    return sax.root();
}

} // namespace oomlens::pickle
