"""Full-size config: 64 x 64 (f_r, f_v) grid, a long ODE horizon, 16 trained cells, and the
full-manifold ODE-vs-training check on the tiny recall spec of docs/imir.md (7440 sequences;
about 12 min of gradient descent on 2 shared cores)."""
import ml_collections


def get_config():
    c = ml_collections.ConfigDict()
    # the (f_r, f_v) diagram and the trained cells: recall, 4 blocks (T = 7), V = 16
    c.task = dict(n_common=8, n_rare=8, n_blocks=4, b=1, f_r_ref=0.5, f_v_ref=0.1)
    # the (b, f_r) diagram: b = 1 .. n_blocks - 1
    c.task_b = dict(n_common=32, n_rare=32, n_blocks=16, f_v=0.1)
    c.grid = dict(n=64, f_r_min=0.0, f_r_max=1.0, f_v_min=0.0, f_v_max=1.0)
    # ODEs: adaptive (mechjax.analysis.imir.dynamics.solver); n_steps sets the first step,
    # t1 / n_steps
    c.ode = dict(t1=8000.0, n_steps=200, n_save=50, init=[0.1, 0.1, 0.1, 0.1], threshold=0.5,
                 check_cells=16)
    c.theorem2 = dict(n_common=256, n_rare=256, n_blocks=4, b=1, p_iwl=0.999,
                      settings=[[0.1, 0.0], [0.3, 0.0], [0.5, 0.0], [0.1, 0.3], [0.3, 0.3],
                                [0.7, 0.2], [0.05, 0.05], [0.9, 0.5]])
    c.theorem3 = dict(n_common=128, n_rare=128, n_blocks=64, b_max=8, f_r=0.5, f_v=0.1,
                      small_n_blocks=10)
    c.cells = dict(n_cells=16, lr=1.0, steps=4000, n_save=40, batch_size=64, eval_size=1024,
                   seed=0)
    c.ode_check = dict(n_common=4, n_rare=4, n_blocks=3, f_r=0.4, f_v=0.2, t1=400.0, lr=0.2,
                       n_save=40)
    c.confinement = dict(enabled=True, seed=1)
    # the default diagrams: exact dynamics on every manifold coordinate (docs/imir.md, section 9)
    # Heun at rtol 1e-2 with a 150-step first pass: the same winners as Tsit5 at 1e-3 on
    # 16 x 16, |dp| <= 0.008, 4x faster (measured; docs/design.md, "Dependencies")
    c.exact = dict(n_common=16, n_rare=16, n_blocks=3, b=1, n=64, t1=2000.0, n_steps=100,
                   n_save=20, rtol=1e-2, solver="heun", step_cap=150)
    c.exact_b = dict(n_common=16, n_rare=16, n_blocks=4, n=64, f_v=0.1)
    c.exact_check = dict(n_common=4, n_rare=4, n_blocks=3, n_cells=4, t1=1000.0, n_save=20)
    c.exact_sgd = dict(f_r=0.5, f_v=0.1, lr=1.0, steps=1000, n_save=20, batch_size=1024, seed=0)
    # the (f_r, f_v) diagram at more sizes: V = 32, 128, 512 at T = 5, and T = 7 at V = 32
    c.sizes_scan = dict(specs=[[16, 16, 3, 64], [64, 64, 3, 64], [256, 256, 3, 64], [16, 16, 4, 32]])
    c.validate = dict(n_cells=16, lr=1.0, batch_size=256, eval_size=1024, seed=0)
    # the standard architecture on the same 16 cells (Adam: plain SGD on a random init has no
    # gradient-flow time to match anyway); 4 seeds each, one program
    c.validate_standard = dict(n_cells=16, n_seeds=4, d_model=64, steps=4000, n_evals=20,
                               lr=1e-3, optimizer="adam", batch_size=64, eval_size=1024, seed=0)
    return c
