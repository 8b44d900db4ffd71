#include "views/settingsdialog.h"

#include "opening/categoryrulesfile.h"
#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <QColorDialog>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace oomlens {

SettingsDialog::SettingsDialog(const AppSettings& settings, QWidget* parent)
    : QDialog(parent)
    , m_settings(settings)
{
    setWindowTitle(QStringLiteral("oomlens settings"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(analysisGroup());
    layout->addWidget(timelineGroup());
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    layout->addWidget(m_buttons);
    connect(m_rules, &QLineEdit::textChanged, this, &SettingsDialog::checkRules);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    checkRules();
}

QGroupBox* SettingsDialog::analysisGroup()
{
    auto* analysis = new QGroupBox(QStringLiteral("Analysis"), this);
    auto* form = new QFormLayout(analysis);
    m_device = new QSpinBox(analysis);
    m_device->setRange(-1, 255);
    m_device->setSpecialValueText(QStringLiteral("Automatic: the OOM's device, else the busiest"));
    m_device->setValue(m_settings.device ? *m_settings.device : -1);
    m_device->setToolTip(QStringLiteral("The GPU whose figures the diagnosis and the timeline show first"));
    form->addRow(QStringLiteral("Default device:"), m_device);

    auto* rulesRow = new QHBoxLayout;
    m_rules = new QLineEdit(m_settings.rulesPath, analysis);
    m_rules->setPlaceholderText(QStringLiteral("none — built-in categories only"));
    m_rules->setClearButtonEnabled(true);
    rulesRow->addWidget(m_rules, 1);
    auto* browse = new QPushButton(QStringLiteral("Browse…"), analysis);
    rulesRow->addWidget(browse);
    form->addRow(QStringLiteral("Category rules file:"), rulesRow);
    m_rulesStatus = new QLabel(analysis);
    m_rulesStatus->setWordWrap(true);
    m_rulesStatus->setTextFormat(Qt::RichText);
    form->addRow(QString(), m_rulesStatus);
    auto* rulesHelp = new QLabel(QStringLiteral("<span style='color:gray'>JSON or YAML, <code>{category: regex}</code> "
                                                "over frame names and filenames, as Mosaic uses. Categories: "
                                                "parameters, gradients, optimizer_state, activations, temporaries, "
                                                "inputs, communication, kv_cache, unknown.</span>"),
        analysis);
    rulesHelp->setWordWrap(true);
    form->addRow(QString(), rulesHelp);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Category rules"),
            QFileInfo(m_rules->text()).absolutePath(), QStringLiteral("Rules (*.json *.yaml *.yml);;All files (*)"));
        if (!path.isEmpty())
            setRulesPath(path);
    });
    return analysis;
}

QGroupBox* SettingsDialog::timelineGroup()
{
    auto* timeline = new QGroupBox(QStringLiteral("Timeline"), this);
    auto* timelineForm = new QFormLayout(timeline);
    m_axis = new QComboBox(timeline);
    m_axis->addItem(QStringLiteral("Wall-clock time"));
    m_axis->addItem(QStringLiteral("Event index"));
    m_axis->setCurrentIndex(m_settings.eventAxis ? 1 : 0);
    timelineForm->addRow(QStringLiteral("Horizontal axis:"), m_axis);
    auto* grid = new QGridLayout;
    for (int i = 0; i < categoryCount; ++i) {
        auto* button = new QPushButton(categoryText(Category(i)), timeline);
        button->setToolTip(QStringLiteral("Choose the colour of this category's band"));
        m_colorButtons[size_t(i)] = button;
        grid->addWidget(button, i / 4, i % 4);
        connect(button, &QPushButton::clicked, this, [this, i] {
            const QColor chosen = QColorDialog::getColor(
                colors::category(Category(i)), this, QStringLiteral("Colour of %1").arg(categoryText(Category(i))));
            if (chosen.isValid()) {
                m_settings.categoryColors[size_t(i)] = chosen;
                showColor(i);
            }
        });
        showColor(i);
    }
    auto* resetColors = new QPushButton(QStringLiteral("Default colours"), timeline);
    grid->addWidget(resetColors, 1, 3);
    timelineForm->addRow(QStringLiteral("Category colours:"), grid);
    connect(resetColors, &QPushButton::clicked, this, [this] {
        for (int i = 0; i < categoryCount; ++i) {
            m_settings.categoryColors[size_t(i)] = QColor();
            showColor(i);
        }
    });
    return timeline;
}

void SettingsDialog::showColor(int category)
{
    QPixmap swatch(14, 14);
    swatch.fill(m_settings.categoryColors[size_t(category)].isValid() ? m_settings.categoryColors[size_t(category)]
                                                                      : colors::defaultCategory(Category(category)));
    m_colorButtons[size_t(category)]->setIcon(QIcon(swatch));
}

void SettingsDialog::setRulesPath(const QString& path)
{
    m_rules->setText(path);
    checkRules();
}

void SettingsDialog::checkRules()
{
    const QString path = m_rules->text().trimmed();
    m_rulesError.clear();
    if (!path.isEmpty()) {
        std::string error;
        const auto rules = readCategoryRules(path.toStdString(), &error);
        if (!rules)
            m_rulesError = QString::fromStdString(error.empty() ? std::string("cannot be read") : error);
        else
            m_rulesStatus->setText(
                QStringLiteral("<span style='color:#2e8b57'>✓ %1 rule(s)</span>").arg(rules->rules().size()));
    } else {
        m_rulesStatus->clear();
    }
    if (!m_rulesError.isEmpty())
        m_rulesStatus->setText(QStringLiteral("<span style='color:#c62828'><b>Rules not usable:</b> %1</span>")
                                   .arg(m_rulesError.toHtmlEscaped()));
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(m_rulesError.isEmpty());
}

AppSettings SettingsDialog::settings() const
{
    AppSettings result = m_settings;
    result.device = m_device->value() >= 0 ? std::optional<int32_t>(m_device->value()) : std::nullopt;
    result.eventAxis = m_axis->currentIndex() == 1;
    result.rulesPath = m_rules->text().trimmed();
    return result;
}

} // namespace oomlens
