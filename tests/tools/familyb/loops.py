"""The user's side of a run: a custom loop, a Trainer-style loop with evaluation, and a
Lightning-style closure optimizer (forward and backward run inside optimizer.step(closure)).
Each loop pushes the Python frames its code would show, so stacks and tracebacks agree."""

CODE = {}


def line(filename, number, name, code=None):
    if code:
        CODE[(filename, number)] = code
    return (filename, number, name)


class Loop:
    """Frames of one loop style; `site` is the site-packages folder of the run."""

    def __init__(self, kind, stacks, script):
        self.kind = kind
        self.st = stacks
        self.script = script
        s = script
        lib = stacks.lib
        if kind == "custom":
            self.outer = [line(s, 231, "<module>", "main(parse_args())"), line(s, 204, "main", "train_one_epoch(model, optimizer, loader, epoch)")]
            self.step_fn = [line(s, 166, "train_one_epoch", "loss = train_step(model, optimizer, batch)")]
            self.fwd = [line(s, 131, "train_step", "outputs = model(**batch)")]
            self.bwd = [line(s, 133, "train_step", "loss.backward()")]
            self.opt = [line(s, 135, "train_step", "optimizer.step()")]
            self.data = [line(s, 128, "train_step", "batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}")]
            self.eval_outer = [line(s, 231, "<module>", "main(parse_args())"), line(s, 209, "main", "metrics = evaluate(model, val_loader)")]
            self.eval_fwd = [stacks.torch("utils/_contextlib.py", 116, "decorate_context"), line(s, 187, "evaluate", "logits = model(**batch).logits")]
        elif kind == "trainer":
            t = "transformers/trainer.py"
            self.outer = [line(s, 655, "<module>", "main()"), line(s, 604, "main", "train_result = trainer.train(resume_from_checkpoint=checkpoint)"),
                          lib(t, 2245, "train"), lib(t, 2560, "_inner_training_loop")]
            self.step_fn = [lib(t, 2560, "_inner_training_loop")][0:0]
            self.fwd = [lib(t, 3740, "training_step"), lib(t, 3801, "compute_loss")]
            self.bwd = [lib(t, 3787, "training_step"), lib("accelerate/accelerator.py", 2329, "backward")]
            self.opt = [lib(t, 2622, "_inner_training_loop"), lib("accelerate/optimizer.py", 171, "step")]
            self.data = [lib(t, 3740, "training_step"), lib(t, 3655, "_prepare_inputs")]
            self.eval_outer = [line(s, 655, "<module>", "main()"), line(s, 604, "main", "train_result = trainer.train(resume_from_checkpoint=checkpoint)"),
                               lib(t, 2245, "train"), lib(t, 2652, "_inner_training_loop"), lib(t, 3077, "_maybe_log_save_evaluate"),
                               lib(t, 4151, "evaluate"), lib(t, 4345, "evaluation_loop")]
            self.eval_fwd = [lib(t, 4589, "prediction_step")]
        else:  # lightning closure
            L = "lightning/pytorch/"
            self.outer = [line(s, 118, "<module>", "trainer.fit(module, datamodule=dm)"), lib(L + "trainer/trainer.py", 539, "fit"),
                          lib(L + "trainer/call.py", 47, "_call_and_handle_interrupt"), lib(L + "trainer/trainer.py", 981, "_run"),
                          lib(L + "loops/fit_loop.py", 205, "run"), lib(L + "loops/training_epoch_loop.py", 140, "run"),
                          lib(L + "loops/training_epoch_loop.py", 250, "advance"), lib(L + "loops/optimization/automatic.py", 190, "run"),
                          lib(L + "loops/optimization/automatic.py", 268, "_optimizer_step"), lib(L + "core/module.py", 1306, "optimizer_step"),
                          lib(L + "core/optimizer.py", 153, "step"), lib(L + "strategies/strategy.py", 238, "optimizer_step"),
                          lib(L + "plugins/precision/amp.py", 77, "optimizer_step")]
            self.step_fn = []
            closure = [stacks.torch("optim/optimizer.py", 487, "wrapper"), stacks.torch("optim/optimizer.py", 91, "_use_grad"),
                       stacks.torch("optim/adamw.py", 197, "step"), lib(L + "plugins/precision/precision.py", 108, "_wrap_closure"),
                       lib(L + "loops/optimization/automatic.py", 146, "__call__")]
            self.fwd = closure + [lib(L + "loops/optimization/automatic.py", 132, "closure"), lib(L + "loops/optimization/automatic.py", 319, "_training_step"),
                                  lib(L + "strategies/strategy.py", 390, "training_step"), line(s, 61, "training_step", "logits = self.model(input_ids).logits")]
            self.bwd = closure + [lib(L + "loops/optimization/automatic.py", 135, "closure"), lib(L + "loops/optimization/automatic.py", 306, "backward_fn"),
                                  lib(L + "strategies/strategy.py", 212, "backward"), lib(L + "core/module.py", 1101, "backward")]
            self.opt = []
            self.data = [lib(L + "loops/optimization/automatic.py", 319, "_training_step"), lib(L + "core/module.py", 0, "transfer_batch_to_device")][0:1]
            self.eval_outer = self.outer[:5] + [lib(L + "loops/evaluation_loop.py", 145, "run"), lib(L + "loops/evaluation_loop.py", 437, "_evaluation_step"),
                                                lib(L + "strategies/strategy.py", 411, "validation_step")]
            self.eval_fwd = [line(s, 79, "validation_step", "logits = self.model(input_ids).logits")]
        self.backward_torch = [stacks.torch("_tensor.py", 581, "backward"), stacks.torch("autograd/__init__.py", 347, "backward"),
                               stacks.torch("autograd/graph.py", 825, "_engine_run_backward")]
        known = {("_tensor.py", 581): "torch.autograd.backward(",
                 ("autograd/__init__.py", 347): "_engine_run_backward(",
                 ("autograd/graph.py", 825): "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
                 ("nn/modules/module.py", 1736): "return self._call_impl(*args, **kwargs)",
                 ("nn/modules/module.py", 1747): "return forward_call(*args, **kwargs)",
                 ("optim/optimizer.py", 487): "out = func(*args, **kwargs)",
                 ("optim/optimizer.py", 91): "ret = func(self, *args, **kwargs)",
                 ("nn/modules/module.py", 1340): "return self._apply(convert)",
                 ("nn/modules/module.py", 900): "module._apply(fn)",
                 ("nn/modules/module.py", 927): "param_applied = fn(param)",
                 ("nn/modules/module.py", 1326): "return t.to(",
                 ("utils/_contextlib.py", 116): "return func(*args, **kwargs)"}
        for (relative, number), code in known.items():
            CODE[(stacks.site + "/torch/" + relative, number)] = code

    def step(self, run, batch, seq, keep=None):
        """One training step; keep(run, head, logits) lets the user's code hold on to tensors."""
        st = self.st
        st.push(*self.outer)
        st.push(*self.step_fn)
        try:
            st.push(*self.data)
            ins = run.inputs(batch, seq, line=1 if self.kind == "trainer" else 0)
            st.pop(len(self.data))
            st.push(*self.fwd)
            per_layer, head, loss = run.forward(batch, seq)
            st.pop(len(self.fwd))
            if keep:
                keep(run, head)
            st.push(*self.bwd)
            st.push(*self.backward_torch)
            run.backward(batch, seq, per_layer, head, loss)
            st.pop(len(self.backward_torch) + len(self.bwd))
            run.optimizer_step(self.opt)
            run.zero_grad()
            for block in ins:
                run.free(block)
            run.step_blocks = {b: None for b in run.step_blocks if b.allocated}
            run.step += 1
            run.dev.tick(50_000)
        finally:
            del st.context[:]

    def eval_batch(self, run, batch, seq):
        st = self.st
        st.push(*self.eval_outer)
        try:
            ins = run.inputs(batch, seq, line=1 if self.kind == "trainer" else 0)
            st.push(*self.eval_fwd)
            logits = run.forward(batch, seq, train=False)
            st.pop(len(self.eval_fwd))
            for block in ins:
                run.free(block)
            return logits
        finally:
            del st.context[:]

    def eval_context(self):
        return list(self.eval_outer)
