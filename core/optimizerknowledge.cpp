#include "core/optimizerknowledge.h"

#include <array>

namespace oomlens {

namespace {

constexpr std::array<OptimizerFacts, 15> optimizers { {
    { "adamw", "AdamW", true, 2, MomentWidth::Parameter, false },
    { "adam", "Adam", true, 2, MomentWidth::Parameter, false },
    { "adamax", "Adamax", true, 2, MomentWidth::Parameter, false },
    { "nadam", "NAdam", true, 2, MomentWidth::Parameter, false },
    { "radam", "RAdam", true, 2, MomentWidth::Parameter, false },
    { "sparse_adam", "SparseAdam", true, 2, MomentWidth::Parameter, false },
    { "adadelta", "Adadelta", true, 2, MomentWidth::Parameter, false },
    { "rprop", "Rprop", true, 2, MomentWidth::Parameter, false },
    { "adagrad", "Adagrad", true, 1, MomentWidth::Parameter, false },
    { "rmsprop", "RMSprop", true, 1, MomentWidth::Parameter, false },
    { "asgd", "ASGD", true, 1, MomentWidth::Parameter, false },
    { "sgd", "SGD", true, 1, MomentWidth::Parameter, true },
    { "adamw-8bit", "8-bit AdamW", false, 2, MomentWidth::OneByte, false },
    { "lion", "Lion", false, 1, MomentWidth::Parameter, false },
    { "adafactor", "Adafactor", false, 1, MomentWidth::Factored, false },
} };

constexpr std::array<OptimizerVariantFacts, 4> variants { {
    { "foreach", true, false },
    { "fused", false, false },
    { "paged", false, false },
    { "offload", false, true },
} };

} // namespace

const OptimizerFacts* optimizerNamed(std::string_view key)
{
    for (const OptimizerFacts& facts : optimizers) {
        if (facts.key == key)
            return &facts;
    }
    return nullptr;
}

const OptimizerFacts* torchOptimizer(std::string_view classOrModule)
{
    for (const OptimizerFacts& facts : optimizers) {
        if (facts.inTorchOptim && (facts.label == classOrModule || facts.key == classOrModule))
            return &facts;
    }
    return nullptr;
}

double stateBytesPerParameter(const OptimizerFacts& facts, int moments, double parameterBytes, int matrixSide)
{
    switch (facts.width) {
    case MomentWidth::Parameter:
        return moments * parameterBytes;
    case MomentWidth::OneByte:
        return moments * 1.0;
    case MomentWidth::Factored:
        return matrixSide > 0 ? moments * 2.0 * 4.0 / matrixSide : 0.0;
    }
    return 0;
}

const OptimizerVariantFacts* optimizerVariantNamed(std::string_view key)
{
    for (const OptimizerVariantFacts& facts : variants) {
        if (facts.key == key)
            return &facts;
    }
    return nullptr;
}

} // namespace oomlens
