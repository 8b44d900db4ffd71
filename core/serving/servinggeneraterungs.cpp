#include "core/serving/servingrungs.h"

#include <cmath>

namespace oomlens::servingrungs {

// generate() keeps, per layer, the keys and values of batch x beams x (prompt + new tokens), and
// the logits of every beam at each step: the cache grows with every token it generates.
Fix generateFewerTokens(const ServingView& view)
{
    std::string detail = "The cache generate() keeps grows with batch x beams x (prompt + new tokens); each of the "
                         "three halves it when halved";
    std::string call = "model.generate(**inputs, max_new_tokens=256, num_beams=1)";
    const auto beams = view.run.settingValue("num_beams");
    const auto newTokens = view.run.settingValue("max_new_tokens");
    if (beams && *beams > 1)
        detail += "; " + std::to_string(static_cast<long long>(*beams)) + " beams hold " + oneDecimal(*beams)
            + " times the cache of greedy decoding";
    if (newTokens && *newTokens >= 2)
        call = "model.generate(**inputs, max_new_tokens=" + std::to_string(static_cast<long long>(*newTokens / 2))
            + ", num_beams=1)";
    return makeRung(FixKind::GenerateFewerTokens, "Generate fewer sequences or tokens at once",
        detail + ". Split the inputs into smaller batches too.", call + "\n# and pass fewer prompts per call");
}

Fix generateCache()
{
    return makeRung(FixKind::GenerateCache, "Keep the cache off the GPU or smaller",
        "An offloaded cache keeps only the current layer's keys and values on the GPU; a quantised one stores them in "
        "4 bits (numerics change slightly); a static cache allocates once and stops the growth's fragmentation.",
        "model.generate(**inputs, cache_implementation=\"offloaded\")\n"
        "# or: cache_implementation=\"quantized\", cache_config={\"backend\": \"quanto\", \"nbits\": 4}");
}

Fix generateSdpa()
{
    return makeRung(FixKind::Sdpa, "Use memory-efficient attention (SDPA)",
        "The eager attention builds a prompt x prompt score matrix per head; SDPA's kernels never store it.",
        "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"sdpa\", torch_dtype=torch.bfloat16)");
}

Fix generateQuantizedWeights()
{
    return makeRung(FixKind::EngineQuantizedWeights, "Load the weights in 4 or 8 bits, or spread them",
        "4-bit weights take a quarter of 16-bit ones (the outputs change); device_map=\"auto\" puts what does not fit "
        "on other GPUs or the CPU (slow).",
        "model = AutoModelForCausalLM.from_pretrained(name, device_map=\"auto\",\n"
        "    quantization_config=BitsAndBytesConfig(load_in_4bit=True))",
        true);
}

Fix diffusersOffload()
{
    return makeRung(FixKind::DiffusersCpuOffload, "Keep the pipeline's models on the CPU until each runs",
        "Model offload moves the text encoder, the denoiser and the VAE to the GPU one at a time; sequential offload "
        "moves one layer at a time (least memory, slowest). Do not call pipe.to(\"cuda\") first.",
        "pipe.enable_model_cpu_offload()\n# or, least memory: pipe.enable_sequential_cpu_offload()");
}

Fix diffusersVaeTiling()
{
    return makeRung(FixKind::DiffusersVaeTiling, "Decode the latents in slices and tiles",
        "The VAE's decode of a large image is the pipeline's largest activation; slicing decodes one image of the "
        "batch at a time, tiling one tile of the image at a time.",
        "pipe.vae.enable_slicing()\npipe.vae.enable_tiling()");
}

Fix diffusersAttentionSlicing()
{
    return makeRung(FixKind::DiffusersAttentionSlicing, "Compute attention in slices",
        "The denoiser's attention over every latent pixel is computed a few heads at a time.",
        "pipe.enable_attention_slicing()");
}

Fix diffusersResolution()
{
    return makeRung(FixKind::DiffusersResolution, "Generate at a lower resolution or fewer images per prompt",
        "Latents, attention and the VAE's decode grow with the pixels: half the side is a quarter of the pixels.",
        "image = pipe(prompt, height=768, width=768, num_images_per_prompt=1).images[0]", true);
}

} // namespace oomlens::servingrungs
