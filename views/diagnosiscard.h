#pragma once

#include "core/diagnosis.h"

#include <QFrame>

namespace oomlens {

// One diagnosis: title, confidence, evidence (clickable where it points into a snapshot) and
// the fixes in ladder order, each with its snippet and a copy button.
class DiagnosisCard : public QFrame
{
    Q_OBJECT
public:
    explicit DiagnosisCard(const Diagnosis& diagnosis, int rank, QWidget* parent = nullptr);

    const Diagnosis& diagnosis() const { return m_diagnosis; }

signals:
    void evidenceActivated(const oomlens::EvidenceLink& link);

protected:
    // Painted from the current palette, not a stylesheet frozen at construction, so the card
    // follows a live switch to dark mode.
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    QWidget* fixWidget(const Fix& fix, int number);

    Diagnosis m_diagnosis;
};

// A small rounded label: "changes the experiment", "−5.6 GiB".
QWidget* makeBadge(const QString& text, const QColor& color, QWidget* parent);

} // namespace oomlens
