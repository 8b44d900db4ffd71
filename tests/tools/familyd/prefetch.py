"""A CUDA data prefetcher in the style of NVIDIA apex's ImageNet example (`data_prefetcher`): the
next batch is copied to the GPU and normalised on a side stream (`with torch.cuda.stream(self.stream)`:
uint8 -> float -> sub_/div_), the training loop calls `input.record_stream(current_stream)` on what it
takes, and frees the batch when the step is done; the loop logs loss.item() only every
`sync_every` steps, so the CPU runs up to that many steps ahead of the GPU and the batches it freed
stay pending. Multi-scale training makes every batch a different size."""

import random

SIDE = 0x55B3D8E01A40


def run_prefetch(r, P, steps, batch, sizes, feat_per_px, params, sync_every, lag_steps, record_streams=True,
                 user="/workspace/detection/train_net.py", seed=1):
    rng = random.Random(seed)
    a = r.a
    pf = [(user, 58, "preload", "self.next_input = self.next_input.cuda(non_blocking=True)")]
    norm = [(user, 63, "preload", "self.next_input = self.next_input.float().sub_(self.mean).div_(self.std)")]
    r.phase = "load"
    with r.at(P.to_device(user, 210, "model = model.cuda()")):
        w = [r.alloc(params * 4 // 64, "parameters") for _ in range(64)]
    grads = None
    momentum = None
    fwd = [(user, 250, "train", "loss_dict = model(images, targets)")]
    for step in range(steps):
        r.step = step
        H, W = rng.choice(sizes)
        r.phase = "data"
        with r.at([(user, 246, "train", "images, targets = prefetcher.next()"), (user, 70, "next", "self.preload()")]):
            with r.at(pf):
                raw = r.alloc(batch * 3 * H * W, "inputs", stream=SIDE)
            with r.at(norm):
                img = r.alloc(batch * 3 * H * W * 4, "inputs", stream=SIDE)
            r.free(raw)
            a.launch(SIDE)
        if record_streams:
            r.record_stream(img, 0)
        r.phase = "forward"
        with r.at(fwd):
            feats = []
            for lvl, scale in enumerate([4, 8, 16, 32, 64]):
                px = (H // scale) * (W // scale)
                feats.append(r.alloc(batch * px * feat_per_px * 2 * (4 if lvl == 0 else 1), "activations"))
        r.phase = "backward"
        with r.at(P.backward_call(user, 256, "losses.backward()")):
            if grads is None:
                grads = [r.alloc(params * 4 // 64, "gradients") for _ in range(64)]
            for f in reversed(feats):
                t = r.alloc(f.requested, "temporaries")
                r.free(f)
                r.free(t)
        r.phase = "optimizer"
        with r.at(P.optimizer_step(user, 258, "sgd")):
            if momentum is None:
                momentum = [r.alloc(params * 4 // 64, "optimizer_state") for _ in range(64)]
        r.free(img)
        a.launch(0)
        if (step + 1) % sync_every == 0:
            a.finish(0)
            a.finish(SIDE)
        else:
            a.finish_all_but(0, lag_steps)
            a.finish_all_but(SIDE, lag_steps)
