"""The capture helper on a real GPU: two lines, a run that fails in its first backward."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oomlens_capture  # noqa: E402
import torch  # noqa: E402
import make_cases as mc  # noqa: E402

out = sys.argv[1]
oomlens_capture.install(out)
total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(6.38 * (1 << 30) / total)
model = mc.make_model(torch, 32768, 512, 8, 8).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
try:
    with oomlens_capture.guard():
        for ids, labels in mc.batches(torch, 32768, 16, [512] * 3, "cuda"):
            with oomlens_capture.step():
                loss = torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), labels.flatten())
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
except torch.cuda.OutOfMemoryError:
    print("OOM raised as expected")
print(sorted(os.listdir(out)))
