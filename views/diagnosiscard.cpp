#include "views/diagnosiscard.h"

#include "core/units.h"
#include "views/viewutil.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace oomlens {

QWidget* makeBadge(const QString& text, const QColor& color, QWidget* parent)
{
    auto* badge = new QLabel(text, parent);
    QColor background = color;
    background.setAlpha(40);
    badge->setStyleSheet(QStringLiteral("QLabel { color: %1; background: rgba(%2,%3,%4,%5); border: 1px solid %1;"
                                        " border-radius: 8px; padding: 1px 8px; }")
                             .arg(color.name())
                             .arg(background.red())
                             .arg(background.green())
                             .arg(background.blue())
                             .arg(background.alpha()));
    return badge;
}

DiagnosisCard::DiagnosisCard(const Diagnosis& diagnosis, int rank, QWidget* parent)
    : QFrame(parent)
    , m_diagnosis(diagnosis)
{
    setObjectName(QStringLiteral("diagnosisCard"));
    setFrameShape(QFrame::NoFrame);
    setAttribute(Qt::WA_StyledBackground, false);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(14, 12, 14, 12);
    layout->setSpacing(6);

    auto* header = new QHBoxLayout;
    auto* title = new QLabel(toQString(diagnosis.title), this);
    title->setObjectName(QStringLiteral("diagnosisTitle"));
    QFont titleFont = title->font();
    titleFont.setBold(true);
    titleFont.setPointSizeF(titleFont.pointSizeF() * (rank == 0 ? 1.35 : 1.15));
    title->setFont(titleFont);
    title->setWordWrap(true);
    title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    header->addWidget(title, 1);
    auto* confidence = new QProgressBar(this);
    confidence->setRange(0, 100);
    confidence->setValue(int(std::lround(std::clamp(diagnosis.confidence, 0.0, 1.0) * 100)));
    confidence->setFormat(QStringLiteral("confidence %p%"));
    confidence->setFixedWidth(160);
    confidence->setToolTip(QStringLiteral("How strongly the evidence supports this diagnosis"));
    header->addWidget(confidence, 0, Qt::AlignTop);
    layout->addLayout(header);

    auto* id = new QLabel(
        QStringLiteral("<span style='color:gray'>%1</span>").arg(toQString(diagnosisIdName(diagnosis.id))), this);
    layout->addWidget(id);
    if (!diagnosis.summary.empty()) {
        auto* summary = new QLabel(toQString(diagnosis.summary), this);
        summary->setWordWrap(true);
        summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
        layout->addWidget(summary);
    }

    if (!diagnosis.evidence.empty()) {
        auto* heading = new QLabel(QStringLiteral("<b>Evidence</b>"), this);
        layout->addWidget(heading);
        for (size_t i = 0; i < diagnosis.evidence.size(); ++i) {
            const Evidence& evidence = diagnosis.evidence[i];
            const QString text = toQString(evidence.text).toHtmlEscaped();
            auto* label = new QLabel(this);
            label->setWordWrap(true);
            label->setTextFormat(Qt::RichText);
            if (evidence.link) {
                label->setText(QStringLiteral("• %1 <a href='evidence:%2'>show on timeline ›</a>").arg(text).arg(i));
                label->setToolTip(QStringLiteral("Move the time cursor to event #%1").arg(evidence.link->eventIndex));
                connect(label, &QLabel::linkActivated, this,
                    [this, i] { emit evidenceActivated(*m_diagnosis.evidence[i].link); });
            } else {
                label->setText(QStringLiteral("• ") + text);
                label->setTextInteractionFlags(Qt::TextSelectableByMouse);
            }
            layout->addWidget(label);
        }
    }

    if (!diagnosis.fixes.empty()) {
        auto* heading = new QLabel(QStringLiteral("<b>Fixes</b> <span style='color:gray'>— cheapest and least "
                                                  "experiment-changing first</span>"),
            this);
        layout->addWidget(heading);
        for (size_t i = 0; i < diagnosis.fixes.size(); ++i)
            layout->addWidget(fixWidget(diagnosis.fixes[i], int(i) + 1));
    }
}

QWidget* DiagnosisCard::fixWidget(const Fix& fix, int number)
{
    auto* widget = new QWidget(this);
    auto* layout = new QVBoxLayout(widget);
    layout->setContentsMargins(12, 4, 0, 4);
    layout->setSpacing(4);

    auto* header = new QHBoxLayout;
    auto* title = new QLabel(QStringLiteral("%1. %2").arg(number).arg(toQString(fix.title)), widget);
    QFont font = title->font();
    font.setBold(true);
    title->setFont(font);
    title->setWordWrap(true);
    header->addWidget(title, 1);
    if (fix.projectedSavingBytes) {
        const int64_t saving = *fix.projectedSavingBytes;
        const QString text = saving > 0 ? QStringLiteral("saves ~%1").arg(bytesText(uint64_t(saving)))
                                        : QString::fromStdString(formatSignedBytes(saving));
        header->addWidget(makeBadge(text, QColor(0x2e, 0x8b, 0x57), widget));
    }
    if (fix.fitsAfter)
        header->addWidget(makeBadge(*fix.fitsAfter ? QStringLiteral("fits after") : QStringLiteral("still too big"),
            *fix.fitsAfter ? QColor(0x2e, 0x8b, 0x57) : QColor(0xc6, 0x28, 0x28), widget));
    if (fix.changesExperiment) {
        auto* badge = makeBadge(QStringLiteral("changes the experiment"), QColor(0xd0, 0x70, 0x10), widget);
        badge->setObjectName(QStringLiteral("changesExperimentBadge"));
        badge->setToolTip(QStringLiteral("This fix changes what is trained (data, precision or model), "
                                         "not just how it is run"));
        header->addWidget(badge);
    }
    layout->addLayout(header);

    if (!fix.detail.empty()) {
        auto* detail = new QLabel(toQString(fix.detail), widget);
        detail->setWordWrap(true);
        detail->setTextInteractionFlags(Qt::TextSelectableByMouse);
        layout->addWidget(detail);
    }
    if (!fix.snippet.empty()) {
        auto* row = new QHBoxLayout;
        auto* snippet = new QPlainTextEdit(toQString(fix.snippet), widget);
        snippet->setObjectName(QStringLiteral("fixSnippet"));
        snippet->setReadOnly(true);
        snippet->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        snippet->setLineWrapMode(QPlainTextEdit::NoWrap);
        const int lines = int(snippet->toPlainText().count(QLatin1Char('\n'))) + 1;
        snippet->setFixedHeight(snippet->fontMetrics().lineSpacing() * std::min(lines, 12) + 14);
        row->addWidget(snippet, 1);
        auto* copy = new QToolButton(widget);
        copy->setText(QStringLiteral("Copy"));
        copy->setToolTip(QStringLiteral("Copy the snippet to the clipboard"));
        const QString text = snippet->toPlainText();
        connect(copy, &QToolButton::clicked, copy, [copy, text] {
            QApplication::clipboard()->setText(text);
            copy->setText(QStringLiteral("Copied"));
        });
        row->addWidget(copy, 0, Qt::AlignTop);
        layout->addLayout(row);
    }
    return widget;
}

void DiagnosisCard::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing);
    QPainterPath outline;
    outline.addRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6);
    painter.fillPath(outline, palette().color(QPalette::Base));
    painter.setPen(QPen(palette().color(QPalette::Mid), 1));
    painter.drawPath(outline);
}

void DiagnosisCard::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange)
        update();
    QFrame::changeEvent(event);
}

} // namespace oomlens
