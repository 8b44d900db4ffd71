#include "views/errorbanner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace oomlens {

ErrorBanner::ErrorBanner(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("errorBanner"));
    setStyleSheet(QStringLiteral("QWidget#errorBanner { background: rgba(198, 40, 40, 38); "
                                 "border-bottom: 1px solid rgba(198, 40, 40, 140); }"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(12, 6, 6, 6);
    m_text = new QLabel(this);
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_text, 1);
    auto* close = new QToolButton(this);
    close->setText(QStringLiteral("✕"));
    close->setAutoRaise(true);
    close->setToolTip(QStringLiteral("Dismiss"));
    layout->addWidget(close, 0, Qt::AlignTop);
    connect(close, &QToolButton::clicked, this, &ErrorBanner::dismiss);
    hide();
}

void ErrorBanner::showLines(const QStringList& lines)
{
    m_text->setText(lines.join(QLatin1Char('\n')));
    show();
}

void ErrorBanner::dismiss()
{
    hide();
    m_text->clear();
}

QString ErrorBanner::text() const
{
    return m_text->text();
}

} // namespace oomlens
