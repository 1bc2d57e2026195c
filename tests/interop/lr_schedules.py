"""The learning rates torch.optim.lr_scheduler gives, step by step, for the schedules that
tests/test_optim.c checks tensor_lr_* against (its E_lr_* tables were printed by this script with
Debian's python3-torch 1.13). Run: /usr/bin/python3 tests/interop/lr_schedules.py"""
import torch


def run(make, steps, lr):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=lr)
    sched = make(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


S = torch.optim.lr_scheduler
tables = {
    # warmup 10 then cosine to 1e-4 at step 100 (tensor_lr_linear_warmup_cosine(step, 10, 100, 1e-3, 1e-4))
    "warmup_cosine": run(lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=1 / 10, end_factor=1.0, total_iters=9),
                                                      S.CosineAnnealingLR(o, T_max=90, eta_min=1e-4)], milestones=[10]), 100, 1e-3),
    "cosine": run(lambda o: S.CosineAnnealingLR(o, T_max=30, eta_min=0.01), 45, 0.5),
    "step": run(lambda o: S.StepLR(o, step_size=7, gamma=0.3), 30, 0.2),
    "exponential": run(lambda o: S.ExponentialLR(o, gamma=0.9), 30, 0.2),
    "one_cycle": run(lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=50, pct_start=0.3, div_factor=25.0,
                                            final_div_factor=1e4, anneal_strategy="cos", cycle_momentum=False), 50, 0.1),
}
for name, values in tables.items():
    print("static const double E_lr_%s[] = {%s};" % (name, ", ".join(repr(v) for v in values)))
