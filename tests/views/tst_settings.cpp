#include "common/testutil.h"
#include "views/appsettings.h"
#include "views/casewidget.h"
#include "views/categorycolors.h"
#include "views/diagnosiscard.h"
#include "views/mainwindow.h"
#include "views/plots/timelinedata.h"
#include "views/settingsdialog.h"
#include "views/timelinewidget.h"
#include "views/whatifview.h"

#include <QApplication>
#include <QDialogButtonBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

using namespace oomlens;

namespace {

QString scenario(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/scenarios/") + name;
}

bool waitForLoads(MainWindow& window)
{
    return QTest::qWaitFor([&] { return !window.isLoading(); }, 60000);
}

QString writeFile(const QTemporaryDir& directory, const QString& name, const QByteArray& content)
{
    const QString path = directory.filePath(name);
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(content) != content.size())
        qFatal("cannot write %s", qPrintable(path));
    return path;
}

} // namespace

class TestSettings : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QVERIFY(m_settingsDir.isValid());
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_settings"));
    }

    void settingsSurviveARestart()
    {
        AppSettings settings;
        settings.device = 2;
        settings.eventAxis = true;
        settings.categoryColors[size_t(Category::Activations)] = QColor(0x12, 0x34, 0x56);
        settings.rulesPath = QStringLiteral("/tmp/rules.yaml");
        settings.save();
        const AppSettings loaded = AppSettings::load();
        QCOMPARE(loaded.device, std::optional<int32_t>(2));
        QVERIFY(loaded.eventAxis);
        QCOMPARE(loaded.categoryColors[size_t(Category::Activations)], QColor(0x12, 0x34, 0x56));
        QVERIFY(!loaded.categoryColors[size_t(Category::Parameters)].isValid());
        QCOMPARE(loaded.rulesPath, settings.rulesPath);
        QVERIFY(!loaded.sameAnalysis(AppSettings()));

        loaded.applyColors();
        QCOMPARE(colors::category(Category::Activations), QColor(0x12, 0x34, 0x56));
        AppSettings().applyColors();
        QCOMPARE(colors::category(Category::Activations), colors::defaultCategory(Category::Activations));
        AppSettings().save();
    }

    void dialogRefusesUnusableRules()
    {
        QTemporaryDir directory;
        const QString bad = writeFile(directory, QStringLiteral("bad.json"), R"({"weights": "model\\.py"})");
        const QString good = writeFile(directory, QStringLiteral("good.json"), R"({"inputs": "model\\.py"})");
        SettingsDialog dialog(AppSettings {});
        auto* ok = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        dialog.setRulesPath(bad);
        QVERIFY(!dialog.rulesError().isEmpty());
        QVERIFY(!ok->isEnabled());
        dialog.setRulesPath(directory.filePath(QStringLiteral("missing.yaml")));
        QVERIFY(!dialog.rulesError().isEmpty());
        dialog.setRulesPath(good);
        QVERIFY2(dialog.rulesError().isEmpty(), qPrintable(dialog.rulesError()));
        QVERIFY(ok->isEnabled());
        QCOMPARE(dialog.settings().rulesPath, good);
    }

    void rulesChangeReanalyzesOpenCases()
    {
        QTemporaryDir directory;
        // Everything the model code allocates becomes "inputs": impossible without the rules.
        const QString rules = writeFile(directory, QStringLiteral("rules.json"), R"({"inputs": "model\\.py"})");
        MainWindow window;
        window.resize(1200, 800);
        window.show();
        window.applySettings(AppSettings {});
        window.openFiles({ scenario(QStringLiteral("first_backward.pickle")) });
        QVERIFY(waitForLoads(window));
        auto inputsAtPeak = [&] {
            const AnalyzedCasePtr loaded = window.currentCase()->loadedCase();
            return loaded->analysis.snapshots.front().primary()->categoriesAtPeak[size_t(Category::Inputs)];
        };
        const uint64_t before = inputsAtPeak();

        AppSettings settings = window.settings();
        settings.rulesPath = rules;
        settings.eventAxis = true;
        window.applySettings(settings);
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        QVERIFY2(inputsAtPeak() > before, "the user's rules must re-band the open case");
        QCOMPARE(window.currentCase()->timeline()->axis(), TimelineWidget::Axis::Events);
        QVERIFY(window.bannerText().isEmpty());

        // The file breaks later: the case is re-analyzed without it and the banner says why.
        writeFile(directory, QStringLiteral("rules.json"), "{ not json");
        settings.rulesPath = directory.filePath(QStringLiteral("rules.json"));
        settings.device = 0; // a different analysis, so the case is analyzed again
        window.applySettings(settings);
        QVERIFY(waitForLoads(window));
        QVERIFY2(window.bannerText().contains(QStringLiteral("Category rules not applied")),
            qPrintable(window.bannerText()));
        QCOMPARE(inputsAtPeak(), before);
        window.applySettings(AppSettings {});
        QVERIFY(waitForLoads(window));
    }

    void exportReportWritesOneHtmlFile()
    {
        MainWindow window;
        QTemporaryDir directory;
        QVERIFY(!window.exportReport(directory.filePath(QStringLiteral("none.html"))));
        window.openFiles({ scenario(QStringLiteral("leak.pickle")), scenario(QStringLiteral("leak.oom.txt")) });
        QVERIFY(waitForLoads(window));
        const QString path = directory.filePath(QStringLiteral("report.html"));
        QVERIFY(window.exportReport(path));
        const QByteArray html = test::readFile(path);
        QVERIFY(html.startsWith("<!DOCTYPE html>") || html.startsWith("<!doctype html>"));
        QVERIFY(html.contains("<svg"));
        const auto& diagnosis = window.currentCase()->loadedCase()->analysis.diagnoses.front();
        QVERIFY(html.contains(QByteArray::fromStdString(diagnosisIdText(diagnosis.id))));
        // The What-if plan joins the report only once the user changed the set-up there.
        QVERIFY(!html.contains("id=\"plan\""));
        // A plan needs a model (there is no default one): the run's own size, as the What-if suggests it.
        const DeviceAnalysis& device = *window.currentCase()->loadedCase()->analysis.snapshots.front().primary();
        const uint64_t parameterBytes = device.categoriesAtPeak[static_cast<size_t>(Category::Parameters)];
        window.currentCase()->whatIf()->setParameterCount(
            parameterBytes >= 4 ? QString::number(parameterBytes / 4) : QStringLiteral("1B"));
        QSpinBox* batch = window.currentCase()->whatIf()->findChildren<QSpinBox*>().value(0);
        QVERIFY(batch);
        batch->setValue(batch->value() + 1);
        QVERIFY(window.currentCase()->whatIf()->edited());
        const QString withPlan = directory.filePath(QStringLiteral("with-plan.html"));
        QVERIFY(window.exportReport(withPlan));
        const QByteArray planned = test::readFile(withPlan);
        QVERIFY(planned.contains("<section id=\"plan\">"));
        QVERIFY(planned.contains("Memory plan, projected from this run")); // the case has a snapshot
        QVERIFY(planned.contains(QByteArray::fromStdString(diagnosisIdText(diagnosis.id))));
        QVERIFY(!window.exportReport(directory.filePath(QStringLiteral("no/such/dir/report.html"))));
        QVERIFY(window.bannerText().contains(QStringLiteral("Could not write the report")));
    }

    void diagnosisCardFollowsALivePaletteChange()
    {
        Diagnosis diagnosis;
        diagnosis.id = DiagnosisId::Leak;
        diagnosis.title = "Memory grows step after step";
        DiagnosisCard card(diagnosis, 0);
        card.resize(400, 120);
        card.show();
        const QPalette original = QApplication::palette();
        QPalette dark = original;
        dark.setColor(QPalette::Base, QColor(0x20, 0x22, 0x26));
        dark.setColor(QPalette::Window, QColor(0x18, 0x18, 0x1c));
        dark.setColor(QPalette::WindowText, QColor(0xee, 0xee, 0xee));
        QApplication::setPalette(dark);
        QCoreApplication::processEvents();
        QCOMPARE(card.grab().toImage().pixelColor(card.width() / 2, card.height() - 4), QColor(0x20, 0x22, 0x26));
        QVERIFY(colors::darkPalette());
        QApplication::setPalette(original);
        QCoreApplication::processEvents();
        QCOMPARE(card.grab().toImage().pixelColor(card.width() / 2, card.height() - 4), original.color(QPalette::Base));
    }

private:
    QTemporaryDir m_settingsDir;
};

QTEST_MAIN(TestSettings)
#include "tst_settings.moc"
