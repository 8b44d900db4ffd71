#include "parsers/snapshotreader.h"

#include "core/backgroundrelease.h"
#include "parsers/pickle/jsonvaluereader.h"
#include "parsers/pickle/nativeunpickler.h"
#include "parsers/pickle/snapshotbuilder.h"
#include "parsers/pickle/snapshotcontainer.h"
#include "parsers/python/pyunpickler.h"

#include <memory>
#include <new>
#include <stdexcept>

namespace oomlens {

namespace {

using pickle::DecodeError;
using pickle::ErrorKind;

int protocolOf(std::string_view pickle)
{
    if (pickle.size() >= 2 && static_cast<unsigned char>(pickle[0]) == 0x80)
        return static_cast<unsigned char>(pickle[1]);
    return 0;
}

Snapshot decodeNative(std::string_view pickle, const SnapshotReadOptions& options)
{
    auto builder = std::make_shared<pickle::SnapshotBuilder>();
    builder->setSizeHint(pickle.size());
    auto unpickler = std::make_shared<pickle::NativeUnpickler>(*builder);
    unpickler->cancel = options.cancel;
    unpickler->progress = options.progress;
    const pickle::Value root = unpickler->decode(pickle);
    Snapshot snapshot = builder->finish(root);
    // The decoder's memo and the builder's staging tables of a big file are gigabytes of
    // reservations, a tenth of a second to give back: not on the way to the timeline.
    releaseInBackground(std::move(unpickler));
    releaseInBackground(std::move(builder));
    return snapshot;
}

Snapshot decodePython(std::string_view pickle, const SnapshotReadOptions& options)
{
    if (options.progress)
        options.progress(0, pickle.size());
    pickle::SnapshotBuilder builder;
    builder.setSizeHint(pickle.size());
    python::PythonUnpickleOptions pythonOptions;
    pythonOptions.cancel = options.cancel;
    const pickle::Value root = python::pythonUnpickle(pickle, builder, pythonOptions);
    Snapshot snapshot = builder.finish(root);
    if (options.progress)
        options.progress(pickle.size(), pickle.size());
    return snapshot;
}

Snapshot decode(const pickle::Unwrapped& input, const SnapshotReadOptions& options, SnapshotDecoder& used)
{
    if (input.json) {
        used = SnapshotDecoder::Native;
        pickle::SnapshotBuilder builder;
        builder.setSizeHint(input.payload.size());
        const pickle::Value root = pickle::readJsonValue(input.payload, builder, options.cancel);
        return builder.finish(root);
    }
    if (options.decoder == SnapshotDecoder::Python) {
        used = SnapshotDecoder::Python;
        return decodePython(input.payload, options);
    }
    used = SnapshotDecoder::Native;
    try {
        return decodeNative(input.payload, options);
    } catch (const DecodeError& e) {
        // Without an interpreter (the portable build has none) the native decoder's own error,
        // which names the byte offset, is the clearer answer.
        if (e.kind() != ErrorKind::Unsupported || !options.allowFallback || !python::pythonAvailable())
            throw;
        used = SnapshotDecoder::Python;
        Snapshot snapshot = decodePython(input.payload, options);
        snapshot.warnings.insert(
            snapshot.warnings.begin(), std::string("read by the embedded-Python decoder: ") + e.what());
        return snapshot;
    }
}

} // namespace

bool looksLikeSnapshot(std::string_view bytes)
{
    return pickle::sniffContainer(bytes) != pickle::ContainerKind::None;
}

SnapshotReadResult readSnapshot(std::string_view bytes, const SnapshotReadOptions& options)
{
    SnapshotReadResult result;
    try {
        const pickle::Unwrapped input = pickle::unwrapSnapshot(bytes, options.cancel);
        Snapshot snapshot = decode(input, options, result.usedDecoder);
        snapshot.container = input.container;
        snapshot.pickleProtocol = input.json ? 0 : protocolOf(input.payload);
        result.snapshot = std::make_shared<const Snapshot>(std::move(snapshot));
    } catch (const DecodeError& e) {
        result.cancelled = e.kind() == ErrorKind::Cancelled;
        result.error = e.what();
    } catch (const std::bad_alloc&) {
        result.error = "out of memory while reading the snapshot";
    } catch (const std::out_of_range&) {
        // A container field (a ZIP offset, say) that points outside the file.
        result.error = "the snapshot is corrupt: an offset or length in it points outside the file";
    } catch (const std::exception& e) {
        result.error = std::string("cannot read the snapshot: ") + e.what();
    }
    return result;
}

} // namespace oomlens
