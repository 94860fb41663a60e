"""Default config (minutes on 2 shared CPU cores): the paper grid and theorem checks, 6 trained
cells over a shorter horizon, and the ODE-vs-training check on the 3-position spec of
tests/test_imir_reference.py."""
from experiments.imir_phase.configs import paper


def get_config():
    c = paper.get_config()
    c.ode.t1 = 4000.0
    c.ode.n_steps = 100
    c.ode.check_cells = 8
    c.cells.n_cells = 5
    c.cells.steps = 1000
    c.cells.n_save = 20
    c.cells.eval_size = 512
    c.ode_check = dict(n_common=4, n_rare=2, n_blocks=2, f_r=0.5, f_v=0.2, t1=150.0, lr=0.1,
                       n_save=20)
    # the trained validation cells dominate a default run (d_model = 148 full weights)
    c.validate.batch_size = 64
    c.sizes_scan.specs = [[16, 16, 3, 32], [64, 64, 3, 32], [256, 256, 3, 32], [16, 16, 4, 12]]
    # the standard architecture: 16 cells x 4 seeds (>= 4 seeds per cell for the
    # clock-free comparisons, spread over seeds); 2 seeds took ~2.5 min at load 4-6
    # plain SGD beside Adam at steps = exact.t1 / sgd_lr = 8000: lr 1 and 0.5 blow up
    # (NaN / loss 1e26) once ICL forms at f_r = 0.5 (measured)
    c.validate_standard.update(n_seeds=4, d_model=32, steps=2000, n_evals=10, lr=3e-3,
                               eval_size=512, sgd_lr=0.25)
    return c
