"""Test-size config: seconds on 2 cores (tests/test_imir_phase.py)."""
from experiments.imir_phase.configs import paper


def get_config():
    c = paper.get_config()
    # the 4-coordinate comparison at the exact diagram's sizes (8, 8, 3): its (f_r, f_v) and
    # (b, f_r) grids, its reference and trained cells' solves and its closed form on the exact
    # spec (``four_vs_exact``) are then one compiled program (keyed on sizes and n_save), also
    # the one tests/test_imir_phase.py's vmapped-grid test runs
    c.task = dict(n_common=8, n_rare=8, n_blocks=3, b=1, f_r_ref=0.5, f_v_ref=0.1)
    c.task_b = dict(n_common=8, n_rare=8, n_blocks=3, f_v=0.1)
    c.grid.n = 6
    c.ode = dict(t1=400.0, n_steps=20, n_save=10, init=[0.1, 0.1, 0.1, 0.1], threshold=0.5,
                 check_cells=2)
    c.theorem2.n_common = 64
    c.theorem2.n_rare = 64
    c.theorem3 = dict(n_common=24, n_rare=24, n_blocks=12, b_max=3, f_r=0.5, f_v=0.1,
                      small_n_blocks=5)
    # n_save = ode.n_save: the trained cells' reduced-ODE horizon then runs the diagrams' compiled
    # program (phase.four_coord.solve_grid pads grids to one size and traces t1)
    c.cells = dict(n_cells=1, lr=1.0, steps=20, n_save=10, batch_size=16, eval_size=32, seed=0)
    c.ode_check = dict(n_common=4, n_rare=2, n_blocks=2, f_r=0.5, f_v=0.2, t1=2.0, lr=0.1,
                       n_save=4)
    # one compiled solve of 4 cells serves the grids, the b = 1 row of the (b, f_r) grid, the
    # SGD check and the theorems' trajectories (one spec, method, n_save and size; t1 and the
    # tolerances are arguments): a test-size run is mostly compilation
    c.exact = dict(n_common=8, n_rare=8, n_blocks=3, b=1, n=6, t1=200.0, n_steps=20, n_save=10,
                   rtol=1e-3, solver="tsit5", step_cap=0, chunk=4)
    c.exact_b = dict(n_common=8, n_rare=8, n_blocks=3, n=2, f_v=0.1)
    c.exact_check = dict(n_common=4, n_rare=4, n_blocks=3, n_cells=1, t1=20.0, n_save=2)
    # the three trainings (SGD check, emergence, straddling cells) at one size: one program
    c.exact_sgd = dict(f_r=0.5, f_v=0.1, lr=1.0, steps=200, n_save=10, batch_size=64, seed=0)
    # the exact grid's own spec and size: the same diagram, so the test can compare them (and
    # the compiled solver is the persistent cache's)
    c.sizes_scan = dict(specs=[[8, 8, 3, 6]])
    # one trajectory that forms IWL (f_v = 0, small f_r) and s = 1; b = 1, 2 only (3 blocks)
    c.exact_theorems = dict(settings=[[0.3, 0.0], [1.0, 0.0]], t1=200.0, n_save=10,
                            t3_n_blocks=3, steps=200, n_save_train=10, batch_size=64,
                            eval_size=256, four_coord_reference=False)
    c.validate = dict(n_cells=1, lr=1.0, batch_size=64, eval_size=256, seed=0)
    # the standard architecture with Adam and plain SGD (sgd_lr 0.5: t1 / sgd_lr = 400 -> 399
    # steps, 3 read-offs; at lr 1 one SGD run on V = 16 blows up): the shapes of
    # tests/test_imir_phase.py's planted SGD-arm test, so both arms compile once for the two
    c.validate_standard = dict(n_cells=2, n_seeds=2, d_model=8, steps=150, n_evals=3, lr=3e-2,
                               batch_size=32, eval_size=64, seed=0, sgd_lr=0.5)
    # the default pipeline only; tests/test_imir_phase.py runs the 4-coordinate comparison
    # by itself (run.four_coordinate_comparison)
    c.four_coord = dict(enabled=False)
    return c
