#include "parsers/pickle/listsplit.h"

#include "parsers/pickle/opcodes.h"

namespace oomlens::pickle {

namespace {

// The first batch boundary at or after `from`: APPENDS, MARK, EMPTY_DICT, MEMOIZE, MARK (the
// previous batch's end, the next one's first trace entry). Bytes that only look like one are
// caught when the first decoder arrives there.
uint64_t batchStart(std::string_view data, uint64_t from)
{
    static constexpr char pattern[]
        = { char(op::Appends), char(op::Mark), char(op::EmptyDict), char(op::Memoize), char(op::Mark) };
    if (from >= data.size())
        return ListSplit::noSplit;
    const size_t at = data.find(std::string_view(pattern, sizeof pattern), from);
    return at == std::string_view::npos ? ListSplit::noSplit : at + 1;
}

} // namespace

ListSplit::ListSplit(Start start)
    : m_fork(std::move(start.fork))
    , m_decoder(std::make_unique<NativeUnpickler>(*m_fork))
{
    m_decoder->cancel = &m_abandon;
    m_fork->resolveDeferred = [this](const Value& deferred) {
        const FirstHalf* first = waitForFirstHalf();
        if (!first)
            throw DecodeError(ErrorKind::Unsupported, "the split was abandoned");
        return m_decoder->resolveAcrossSplit(deferred, first->memoSize, *first->memo, *first->builder);
    };
    m_thread = std::thread([this, start = std::move(start)]() mutable { run(std::move(start)); });
}

ListSplit::~ListSplit()
{
    abandon();
    if (m_thread.joinable())
        m_thread.join();
}

bool ListSplit::finish()
{
    if (m_thread.joinable())
        m_thread.join();
    return m_decoded;
}

void ListSplit::run(Start start)
{
    const uint64_t from = batchStart(start.data, start.target);
    m_boundary.store(from, std::memory_order_release);
    m_boundary.notify_all();
    if (from == noSplit)
        return;
    try {
        m_decoder->decodeItems(start.data, from, std::move(start.memo), std::move(start.memoWide));
        m_decoded = true;
    } catch (const std::exception&) {
        // Bad input, a cancel, or what a fork cannot take: the first decoder reads these bytes.
        m_failed.store(true, std::memory_order_release);
    }
}

} // namespace oomlens::pickle
