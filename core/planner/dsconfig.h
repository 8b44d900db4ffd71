#pragma once

#include "core/planner/trainingsetup.h"

#include <nlohmann/json.hpp>

namespace oomlens::planner {

// A DeepSpeed ds_config.json for the set-up: batch sizes (train_batch_size = micro-batch x
// accumulation x GPUs), precision, the optimizer where DeepSpeed has it (8-bit AdamW and
// Adafactor stay client optimizers), and zero_optimization with the offload the set-up asks
// for. Learning rates are placeholders to edit.
nlohmann::ordered_json deepSpeedConfig(const TrainingSetup& setup);

} // namespace oomlens::planner
