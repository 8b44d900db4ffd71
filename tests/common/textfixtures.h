#pragma once

#include "core/textinputs.h"

#include <QString>
#include <QtGlobal>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens::test {

// tests/data/text/<name>, whole; a missing fixture aborts the test run.
std::string textFixture(const char* name);
TextFindings parseTextFixture(const char* name);

// The records of ../shared/corpus/text/<fileName>, one JSON object a line; empty when the corpus
// is absent (callers skip with OOMLENS_REQUIRE_SHARED first).
std::vector<nlohmann::json> corpusTextRecords(const QString& fileName);

// An optional count as something QCOMPARE prints: -1 stands for "not in the text".
qint64 value(const std::optional<uint64_t>& field);

// The seven byte fields of an OomMessage as qint64 data columns, in this order: requested, total,
// free, allocated, reserved, unallocated, allowed (-1 where the message has none) ...
void addOomByteColumns();
// ... and the QTEST of each against the current row; returns at the first mismatch, so callers
// that check more afterwards test QTest::currentTestFailed().
void compareOomBytes(const OomMessage& message);

} // namespace oomlens::test
