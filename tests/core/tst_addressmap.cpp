#include "core/analysis/addressmap.h"

#include <QTest>

#include <random>
#include <unordered_map>

using namespace oomlens;

class TestAddressMap : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void basics()
    {
        AddressMap map(4);
        QCOMPARE(map.find(0x1000), AddressMap::none);
        QCOMPARE(map.insert(0x1000, 7), AddressMap::none);
        QCOMPARE(map.insert(0x1000, 9), 7); // a live address allocated again: the old value comes back
        QCOMPARE(map.find(0x1000), 9);
        QCOMPARE(map.size(), size_t(1));
        QCOMPARE(map.erase(0x2000), AddressMap::none);
        QCOMPARE(map.erase(0x1000), 9);
        QCOMPARE(map.erase(0x1000), AddressMap::none);
        QCOMPARE(map.size(), size_t(0));
        QCOMPARE(map.insert(0, 1), AddressMap::none); // address 0 is a key like any other
        QCOMPARE(map.find(0), 1);
    }

    void matchesUnorderedMap_data()
    {
        QTest::addColumn<int>("seed");
        QTest::addColumn<int>("addressBits");
        // Few distinct addresses: long probe runs, many deletions inside them, wrap-around.
        QTest::newRow("dense") << 1 << 6;
        QTest::newRow("allocator-like") << 2 << 20;
        QTest::newRow("sparse") << 3 << 40;
    }

    void matchesUnorderedMap()
    {
        QFETCH(int, seed);
        QFETCH(int, addressBits);
        std::mt19937_64 random(static_cast<uint64_t>(seed));
        AddressMap map(16);
        std::unordered_map<uint64_t, int32_t> reference;
        const uint64_t mask = (uint64_t(1) << addressBits) - 1;
        for (int32_t step = 0; step < 200000; ++step) {
            // 512-byte aligned device addresses, as the allocator hands them out.
            const uint64_t address = 0x7f0000000000ull + ((random() & mask) << 9);
            switch (random() % 3) {
            case 0: {
                auto it = reference.find(address);
                const int32_t previous = it == reference.end() ? AddressMap::none : it->second;
                QCOMPARE(map.insert(address, step), previous);
                reference[address] = step;
                break;
            }
            case 1: {
                auto it = reference.find(address);
                QCOMPARE(map.erase(address), it == reference.end() ? AddressMap::none : it->second);
                if (it != reference.end())
                    reference.erase(it);
                break;
            }
            default: {
                auto it = reference.find(address);
                QCOMPARE(map.find(address), it == reference.end() ? AddressMap::none : it->second);
            }
            }
            QCOMPARE(map.size(), reference.size());
        }
        size_t seen = 0;
        map.forEach([&](uint64_t address, int32_t value) {
            ++seen;
            QCOMPARE(reference.at(address), value);
        });
        QCOMPARE(seen, reference.size());
    }
};

QTEST_GUILESS_MAIN(TestAddressMap)
#include "tst_addressmap.moc"
