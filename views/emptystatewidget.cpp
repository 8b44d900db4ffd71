#include "views/emptystatewidget.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>

namespace oomlens {

namespace {

// The application's icon, when it has one, above the title.
void addLogo(QVBoxLayout* column, QWidget* parent)
{
    if (const QIcon icon = QApplication::windowIcon(); !icon.isNull()) {
        auto* logo = new QLabel(parent);
        logo->setPixmap(icon.pixmap(96, 96));
        logo->setAlignment(Qt::AlignCenter);
        column->addWidget(logo);
    }
}

// The question oomlens answers, and what it reads.
void addIntroduction(QVBoxLayout* column, QWidget* parent)
{
    auto* title = new QLabel(QStringLiteral("Why did the GPU run out of memory?"), parent);
    QFont titleFont = title->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.9);
    titleFont.setBold(true);
    title->setFont(titleFont);
    title->setAlignment(Qt::AlignCenter);
    column->addWidget(title);

    auto* text = new QLabel(
        QStringLiteral("Drop what you copied off the cluster here — a memory snapshot "
                       "(<code>_dump_snapshot()</code> pickle), the <b>CUDA out of memory</b> traceback, "
                       "<code>torch.cuda.memory_summary()</code> output, <code>nvidia-smi</code> or the whole training "
                       "log.<br>Or copy the error text and press <b>Ctrl+V</b> anywhere in this window."),
        parent);
    text->setTextFormat(Qt::RichText);
    text->setWordWrap(true);
    text->setAlignment(Qt::AlignCenter);
    text->setFixedWidth(640);
    text->setMinimumHeight(text->heightForWidth(640));
    column->addWidget(text, 0, Qt::AlignHCenter);
}

// How to record the failing run, and where the capture helper is.
void addCaptureHint(QVBoxLayout* column, QWidget* parent)
{
    auto* hint = new QLabel(QStringLiteral("Record the failing run: two lines at the top of the training script\n"
                                           "import oomlens_capture\n"
                                           "oomlens_capture.install()  # every CUDA OOM writes a snapshot + sidecar"),
        parent);
    hint->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    hint->setTextInteractionFlags(Qt::TextSelectableByMouse);
    hint->setStyleSheet(QStringLiteral("QLabel { color: gray; padding: 10px; border: 1px dashed palette(mid);"
                                       " border-radius: 6px; }"));
    column->addWidget(hint, 0, Qt::AlignHCenter);
    // The helper ships beside the binary in share/oomlens/python (packaging/CMakeLists.txt).
    const QString helperDir
        = QDir::cleanPath(QCoreApplication::applicationDirPath() + QStringLiteral("/../share/oomlens/python"));
    auto* helper
        = new QLabel((QFileInfo::exists(helperDir)
                             ? QStringLiteral("oomlens_capture is in <a href='%1'>%2</a> (add it to PYTHONPATH). ")
                                   .arg(QUrl::fromLocalFile(helperDir).toString(), helperDir.toHtmlEscaped())
                             : QString())
                + QStringLiteral("README: <i>Capturing a snapshot that answers the question</i>."),
            parent);
    helper->setOpenExternalLinks(true);
    helper->setStyleSheet(QStringLiteral("QLabel { color: gray; }"));
    column->addWidget(helper, 0, Qt::AlignHCenter);
}

} // namespace

EmptyStateWidget::EmptyStateWidget(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("emptyState"));
    auto* outer = new QVBoxLayout(this);
    outer->addStretch(2);
    auto* column = new QVBoxLayout;
    column->setSpacing(12);
    addLogo(column, this);
    addIntroduction(column, this);
    column->addLayout(buildButtons());
    addCaptureHint(column, this);

    m_recentBox = new QWidget(this);
    m_recentLayout = new QVBoxLayout(m_recentBox);
    m_recentLayout->setContentsMargins(0, 8, 0, 0);
    column->addWidget(m_recentBox, 0, Qt::AlignHCenter);
    m_recentBox->hide();

    outer->addLayout(column);
    outer->addStretch(3);
}

QHBoxLayout* EmptyStateWidget::buildButtons()
{
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    auto* open = new QPushButton(QStringLiteral("Open files…"), this);
    open->setDefault(true);
    auto* paste = new QPushButton(QStringLiteral("Paste from clipboard"), this);
    auto* example = new QPushButton(QStringLiteral("Open an example case"), this);
    m_exampleButton = example;
    for (QPushButton* button : { open, paste, example }) {
        button->setMinimumHeight(34);
        button->setMinimumWidth(150);
        buttons->addWidget(button);
    }
    buttons->addStretch(1);
    connect(open, &QPushButton::clicked, this, &EmptyStateWidget::openRequested);
    connect(paste, &QPushButton::clicked, this, &EmptyStateWidget::pasteRequested);
    connect(example, &QPushButton::clicked, this, &EmptyStateWidget::exampleRequested);
    return buttons;
}

void EmptyStateWidget::setExampleAvailable(bool available)
{
    m_exampleButton->setVisible(available);
}

void EmptyStateWidget::setRecentFiles(const QStringList& paths)
{
    while (QLayoutItem* item = m_recentLayout->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    m_recentBox->setVisible(!paths.isEmpty());
    if (paths.isEmpty())
        return;
    auto* heading = new QLabel(QStringLiteral("<b>Recent</b>"), m_recentBox);
    heading->setAlignment(Qt::AlignCenter);
    m_recentLayout->addWidget(heading);
    for (const QString& path : paths.mid(0, 5)) {
        auto* link = new QLabel(
            QStringLiteral("<a href='open'>%1</a> <span style='color:gray'>%2</span>")
                .arg(QFileInfo(path).fileName().toHtmlEscaped(), QFileInfo(path).absolutePath().toHtmlEscaped()),
            m_recentBox);
        link->setAlignment(Qt::AlignCenter);
        connect(link, &QLabel::linkActivated, this, [this, path] { emit recentRequested(path); });
        m_recentLayout->addWidget(link);
    }
}

} // namespace oomlens
