#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "core/job/jobsummary.h"

#include <QStringList>

#include <string>

namespace oomlens::cli {

// Reads every INPUT ('-' = stdin) into one case. Each input that cannot be read gets one line
// on stderr ("oomlens: PATH: reason"); the others are still analyzed. Returns the number of
// inputs that failed.
int loadInputs(const QStringList& paths, Case& into);

// The lines `compare` and `plan --snapshot` print when an input that must be a snapshot is not
// one, or lacks the device asked for (`oomlens mcp` returns the same lines).
QString notASnapshotError(const QString& path);
QString noSuchDeviceError(const QString& path);

// A folder given as an input stands for the snapshot files in it (a job's output directory), by
// name; a folder without any stays as it is, to be reported as unreadable.
QStringList expandFolders(const QStringList& paths);

// The inputs that are snapshot files or rank summaries (`oomlens summarize`), judged by content (a
// map of the file, not a decode), when there are at least two or any summary: the rank files of
// one job. Empty otherwise, and the inputs are one case.
QStringList jobRankFiles(const QStringList& paths);

// One rank file read into a case of its own, with its capture sidecar: core/job's RankLoader.
// Safe to call from several threads at once.
Case loadRankFile(const std::string& path);

// A job as `diagnose` and `report` take it: every rank snapshot summarized by the worker pool and
// every rank summary read (parsers/jobgathering.h), then the failing rank's snapshot opened in full, together with the
// inputs that are not rank files (an OOM message or log given beside the ranks belongs to the rank that failed).
struct LoadedJob
{
    JobSummary summary;
    Case failingCase;
    int failures = 0; // inputs that could not be read, rank files included
};
LoadedJob loadJob(const QStringList& paths, const QStringList& rankFiles, const AnalysisOptions& options);

} // namespace oomlens::cli
