#include "core/analysis/userframe.h"
#include "core/presentation/labels.h"
#include "core/presentation/messagenumbers.h"
#include "core/presentation/palette.h"
#include "core/snapshot.h"
#include "core/units.h"

#include <QTest>

#include <set>

using namespace oomlens;

namespace {

const ExplainedNumber* findRow(const std::vector<ExplainedNumber>& rows, const std::string& label)
{
    for (const ExplainedNumber& row : rows) {
        if (row.label == label)
            return &row;
    }
    return nullptr;
}

} // namespace

class TestPresentation : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void labelsReadAsWords()
    {
        QCOMPARE(categoryLabel(Category::OptimizerState), std::string_view("Optimizer state"));
        QCOMPARE(phaseLabel(Phase::Optimizer), std::string_view("Optimizer step"));
        std::set<std::string_view> seen;
        for (int c = 0; c < categoryCount; ++c) {
            const std::string_view label = categoryLabel(static_cast<Category>(c));
            QVERIFY(!label.empty());
            // A label, never the JSON key (which may hold an underscore).
            QVERIFY(label.find('_') == std::string_view::npos);
            QVERIFY(seen.insert(label).second);
        }
    }

    void paletteIsDistinctPerTheme()
    {
        QCOMPARE(categoryColor(Category::Parameters, Theme::Light).hex(), std::string("#2f6fb3"));
        QCOMPARE(categoryColor(Category::OptimizerState, Theme::Dark).hex(), std::string("#9d86e0"));
        for (int theme = 0; theme < 2; ++theme) {
            std::set<std::string> seen;
            for (int c = 0; c < categoryCount; ++c)
                QVERIFY(seen.insert(categoryColor(static_cast<Category>(c), static_cast<Theme>(theme)).hex()).second);
        }
    }

    void pyTorchFiles_data()
    {
        QTest::addColumn<QString>("filename");
        QTest::addColumn<bool>("pytorch");
        QTest::newRow("site-packages") << "/usr/lib/python3/site-packages/torch/nn/modules/module.py" << true;
        QTest::newRow("relative") << "torch/optim/adam.py" << true;
        QTest::newRow("windows") << "C:\\Python\\Lib\\site-packages\\torch\\autograd\\graph.py" << true;
        QTest::newRow("model") << "model.py" << false;
        QTest::newRow("a torch-like name") << "/home/me/mytorch/train.py" << false;
        QTest::newRow("lightning") << "lightning/pytorch/loops/fit_loop.py" << false;
    }

    void pyTorchFiles()
    {
        QFETCH(QString, filename);
        QFETCH(bool, pytorch);
        QCOMPARE(isPyTorchFile(filename.toStdString()), pytorch);
    }

    void userFrameIsTheInnermostUserPython()
    {
        StringTable strings;
        FrameTable frames;
        const auto frame = [&](const char* file, const char* name) {
            return frames.intern({ strings.intern(file), strings.intern(name), 1 });
        };
        const FrameId cpp = frame("??", "c10::cuda::CUDACachingAllocator::malloc");
        const FrameId linear = frame("torch/nn/modules/linear.py", "forward");
        const FrameId model = frame("model.py", "forward");
        const FrameId train = frame("train.py", "main");
        const std::vector<FrameId> full = { cpp, linear, model, train };
        QCOMPARE(userFrame(frames, strings, frames.internStack(full.data(), full.size())), std::optional(model));
        const std::vector<FrameId> torchOnly = { cpp, linear };
        QCOMPARE(
            userFrame(frames, strings, frames.internStack(torchOnly.data(), torchOnly.size())), std::optional(linear));
        const std::vector<FrameId> cppOnly = { cpp };
        QCOMPARE(userFrame(frames, strings, frames.internStack(cppOnly.data(), cppOnly.size())), std::optional(cpp));
        // The autograd engine's thread (hook_leak, PyTorch 2.11, stacks='all'): the recorder and the
        // allocator come first; the backward node names the work, else the operator.
        const FrameId unwind = frame("??", "torch::unwind::unwind()");
        const FrameId gather = frame("memory_snapshot.cpp", "torch::cuda::(anonymous namespace)::gather_with_cpp()");
        const FrameId empty = frame("??", "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)");
        const FrameId op = frame("??", "at::_ops::nll_loss_backward::call(at::Tensor const&)");
        const FrameId node
            = frame("??", "torch::autograd::generated::NllLossBackward0::apply(std::vector<at::Tensor>&&)");
        const FrameId engine = frame("??", "torch::autograd::Engine::thread_main()");
        const std::vector<FrameId> backwardThread = { unwind, gather, cpp, empty, op, node, engine };
        QCOMPARE(userFrame(frames, strings, frames.internStack(backwardThread.data(), backwardThread.size())),
            std::optional(node));
        const std::vector<FrameId> noNode = { unwind, gather, cpp, empty, op, engine };
        QCOMPARE(userFrame(frames, strings, frames.internStack(noNode.data(), noNode.size())), std::optional(op));
        const std::vector<FrameId> machineryThenEngine = { unwind, gather, cpp, empty, engine };
        QCOMPARE(userFrame(frames, strings, frames.internStack(machineryThenEngine.data(), machineryThenEngine.size())),
            std::optional(engine));
        QVERIFY(!userFrame(frames, strings, FrameTable::emptyStack()));
        QVERIFY(!userFrame(frames, strings, StackId()));
    }

    void messageNumbers()
    {
        OomMessage message;
        message.backend = Backend::Cuda;
        message.requestedBytes = 3 * GiB;
        message.totalBytes = 8 * GiB;
        message.freeBytes = 600 * MiB;
        message.allocatedBytes = 5 * GiB;
        message.reservedUnallocatedBytes = 2 * GiB; // reserved is not printed: OomFacts completes it
        message.processes.push_back({ int64_t(4242), 7 * GiB, true });
        const std::vector<ExplainedNumber> rows = explainMessageNumbers(message);
        QCOMPARE(rows.front().label, std::string("Requested"));
        QCOMPARE(rows.front().value, std::string("3.00 GiB"));
        QVERIFY(!rows.front().meaning.empty() && !rows.front().detail.empty());
        QVERIFY(!findRow(rows, "Reserved by PyTorch"));
        const ExplainedNumber* process = findRow(rows, "This process 4242");
        QVERIFY(process);
        QCOMPARE(process->kind, ExplainedNumber::Kind::Process);
        const ExplainedNumber* outside = findRow(rows, "Used outside PyTorch's cache");
        QVERIFY(outside);
        QCOMPARE(outside->kind, ExplainedNumber::Kind::Derived);
        QCOMPARE(outside->value, formatBytes(8 * GiB - 600 * MiB - 7 * GiB));
        QCOMPARE(rows.back().label, outside->label);

        message.backend = Backend::Mps;
        message.otherAllocationsBytes = 1 * GiB;
        QVERIFY(!findRow(explainMessageNumbers(message), "Used outside PyTorch's cache"));
        QVERIFY(findRow(explainMessageNumbers(message), "Other allocations"));
    }
};

QTEST_GUILESS_MAIN(TestPresentation)
#include "tst_presentation.moc"
