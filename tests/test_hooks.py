import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mechjax.models.config import ModelConfig
from mechjax.models.hooks import (hook_names, patch, project_onto, run_with_cache, run_with_hooks,
                           zero_ablate)
from mechjax.models.transformer import apply, init_params

CFG = ModelConfig(n_layers=2, d_model=16, n_heads=2, d_mlp=32, d_vocab=10, n_ctx=6,
                  normalization="pre", use_bias=True)
TOKENS = jnp.array([[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]])


@pytest.fixture(scope="module")
def params():
    return init_params(jax.random.PRNGKey(0), CFG)


def test_cache_has_transformer_lens_names_and_shapes(params):
    logits, cache = run_with_cache(params, TOKENS, CFG)
    np.testing.assert_allclose(logits, apply(params, TOKENS, CFG), atol=1e-6)
    assert cache["hook_embed"].shape == (2, 6, 16)
    assert cache["hook_pos_embed"].shape == (6, 16)
    assert cache["blocks.1.attn.hook_pattern"].shape == (2, 2, 6, 6)
    assert cache["blocks.1.attn.hook_attn_scores"].shape == (2, 2, 6, 6)
    assert cache["blocks.0.attn.hook_z"].shape == (2, 6, 2, 8)
    assert cache["blocks.0.mlp.hook_pre"].shape == (2, 6, 32)
    for name in ("hook_resid_pre", "hook_resid_mid", "hook_resid_post", "hook_attn_out",
                 "hook_mlp_out"):
        assert cache[f"blocks.1.{name}"].shape == (2, 6, 16)
    np.testing.assert_allclose(cache["blocks.1.attn.hook_pattern"].sum(-1), 1.0, atol=1e-6)
    # the residual stream adds up: resid_post = resid_mid + mlp_out = resid_pre + attn + mlp
    np.testing.assert_allclose(cache["blocks.0.hook_resid_post"],
                               cache["blocks.0.hook_resid_pre"] + cache["blocks.0.hook_attn_out"]
                               + cache["blocks.0.hook_mlp_out"], atol=1e-5)
    assert set(cache) == set(hook_names(CFG, TOKENS.shape))


def test_names_filter(params):
    _, cache = run_with_cache(params, TOKENS, CFG, names_filter=lambda n: n.endswith("pattern"))
    assert sorted(cache) == ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"]
    _, cache = run_with_cache(params, TOKENS, CFG, names_filter="blocks.0.hook_resid_post")
    assert list(cache) == ["blocks.0.hook_resid_post"]


def test_ablation_equals_manual_removal(params):
    logits, cache = run_with_hooks(params, TOKENS, CFG, {"blocks.1.hook_mlp_out": zero_ablate},
                                   names_filter=["blocks.1.hook_resid_post",
                                                 "blocks.1.hook_resid_mid"])
    np.testing.assert_allclose(cache["blocks.1.hook_resid_post"], cache["blocks.1.hook_resid_mid"])
    assert not np.allclose(logits, apply(params, TOKENS, CFG))


def test_projection_hook_keeps_and_removes_a_subspace(params):
    basis = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(5), (16, 3)))[0]
    name = "blocks.0.hook_resid_post"
    _, keep = run_with_hooks(params, TOKENS, CFG, {name: project_onto(basis)}, [name])
    _, drop = run_with_hooks(params, TOKENS, CFG, {name: project_onto(basis, keep=False)}, [name])
    _, full = run_with_cache(params, TOKENS, CFG, [name])
    np.testing.assert_allclose(keep[name] + drop[name], full[name], atol=1e-5)
    np.testing.assert_allclose(drop[name] @ basis, 0.0, atol=1e-5)


def test_patching_one_position(params):
    name = "blocks.0.hook_resid_post"
    _, clean = run_with_cache(params, TOKENS, CFG, [name])
    source = clean[name][1, 2]
    _, patched = run_with_hooks(params, TOKENS, CFG, {name: patch(source, (0, 2))}, [name])
    np.testing.assert_allclose(patched[name][0, 2], source)
    np.testing.assert_allclose(patched[name][1], clean[name][1])


def test_vmap_over_seeds_and_jacobian_through_hook():
    # compiled as a user would (jit): a handful of programs, not one per eager operation
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    stacked = jax.jit(jax.vmap(lambda k: init_params(k, CFG)))(keys)
    name = "blocks.1.hook_resid_mid"
    cache_one = lambda p: run_with_cache(p, TOKENS, CFG, [name])[1][name]
    cached = jax.jit(jax.vmap(cache_one))(stacked)
    assert cached.shape == (3, 2, 6, 16)
    one = jax.tree.map(lambda x: x[1], stacked)
    np.testing.assert_allclose(cached[1], jax.jit(cache_one)(one), atol=1e-6)

    # d logits[last] / d resid_mid[last] by jacfwd through an additive hook vs finite differences
    def logits_given_delta(delta):
        hook = {name: lambda x: x.at[0, -1].add(delta)}
        return run_with_hooks(one, TOKENS, CFG, hook)[0][0, -1]

    eps, e3 = 1e-2, jnp.zeros(16).at[3].set(1.0)
    jac, plus, minus = jax.jit(lambda d: (jax.jacfwd(logits_given_delta)(d),
                                          logits_given_delta(d + eps * e3),
                                          logits_given_delta(d - eps * e3)))(jnp.zeros(16))
    fd = (plus - minus) / (2 * eps)
    np.testing.assert_allclose(jac[:, 3], fd, rtol=2e-2, atol=2e-3)


def test_unknown_hook_name_lists_valid_ones(params):
    with pytest.raises(KeyError, match="blocks.0.hook_resid_pre"):
        run_with_hooks(params, TOKENS, CFG, {"blocks.0.resid_pre": zero_ablate})


@pytest.mark.parametrize("names_filter", [["blocks.0.hook_resid_pst"], "blocks.0.hook_resid_pst",
                                          iter(["hook_embed", "blocks.0.hook_resid_pst"])])
def test_a_listed_cache_name_that_is_no_hook_point_raises_with_near_matches(params, names_filter):
    with pytest.raises(KeyError) as err:
        run_with_cache(params, TOKENS, CFG, names_filter=names_filter)
    message = str(err.value)
    assert "\n" not in message and message.startswith("unknown hook name 'blocks.0.hook_resid_pst'")
    assert "near matches: blocks.0.hook_resid_post" in message
    assert isinstance(err.value, ValueError)  # a bad argument, whichever the caller catches


def test_a_hook_name_with_no_near_match_says_so_in_one_line(params):
    with pytest.raises(KeyError, match=r"'resid' \(no near match\); hook_names\(cfg\) lists all"):
        run_with_hooks(params, TOKENS, CFG, {"resid": zero_ablate})
    with pytest.raises(KeyError, match=r"unknown hook names 'a' .*, 'b' "):
        run_with_hooks(params, TOKENS, CFG, {}, names_filter=["hook_embed", "a", "b"])


def test_valid_listed_names_and_predicates_are_not_refused(params):
    _, cache = run_with_cache(params, TOKENS, CFG, names_filter=iter(["hook_embed"]))
    assert list(cache) == ["hook_embed"]
    _, cache = run_with_cache(params, TOKENS, CFG, names_filter=lambda n: n == "no_such_hook")
    assert cache == {}  # a predicate may match nothing
