#pragma once

#include "views/appsettings.h"

#include <QDialog>

#include <array>

class QComboBox;
class QDialogButtonBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace oomlens {

// Edits AppSettings. A rules file is checked as it is chosen: a file that does not parse says
// why, in red, and cannot be accepted.
class SettingsDialog : public QDialog
{
    Q_OBJECT
public:
    explicit SettingsDialog(const AppSettings& settings, QWidget* parent = nullptr);
    AppSettings settings() const;
    // Empty when the rules file is usable (or none is set).
    QString rulesError() const { return m_rulesError; }
    void setRulesPath(const QString& path);

private:
    QGroupBox* analysisGroup(); // the default device and the category rules file
    QGroupBox* timelineGroup(); // the axis and the category colours
    void checkRules();
    void showColor(int category);

    AppSettings m_settings;
    QSpinBox* m_device = nullptr;
    QComboBox* m_axis = nullptr;
    std::array<QPushButton*, categoryCount> m_colorButtons {};
    QLineEdit* m_rules = nullptr;
    QLabel* m_rulesStatus = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    QString m_rulesError;
};

} // namespace oomlens
