#pragma once

// The model a plan is for, named the way `oomlens plan --model` and the MCP plan tool name it: a
// preset (core/planner/modelspec.h) or a Hugging Face config.json's path.

#include "core/planner/modelspec.h"
#include "opening/inputfailure.h"

#include <optional>
#include <string>

namespace oomlens {

struct ModelRead
{
    std::optional<planner::ModelSpec> model;
    std::optional<InputFailure> failure; // set when there is no model: the file and why
};

// A preset by name, else the config.json at `source` read and understood.
ModelRead readModelSource(const std::string& source);

} // namespace oomlens
