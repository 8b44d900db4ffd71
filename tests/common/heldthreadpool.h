#pragma once

#include <memory>

namespace oomlens::test {

// Holds every thread of Qt's global thread pool until release() (or until it goes): jobs started
// meanwhile wait in the pool's queue, so that a test decides what becomes of them (replaced,
// cancelled, their widget destroyed) before any of them runs. Qt's raster painting draws with the
// same pool: a test that holds it must not let a shown window paint (no processEvents meanwhile).
class HeldThreadPool
{
public:
    HeldThreadPool();
    ~HeldThreadPool();
    HeldThreadPool(const HeldThreadPool&) = delete;
    HeldThreadPool& operator=(const HeldThreadPool&) = delete;

    void release();

private:
    struct Gate;
    std::shared_ptr<Gate> m_gate; // shared with the holders, which may leave after this is gone
    int m_threads = 0;
    bool m_released = false;
};

} // namespace oomlens::test
