"Tests of the language-model pieces of trustlib.models: the hookable TinyTransformer, CausalLM, the shared interface."
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from trustlib.config import ResourceUnavailable
from trustlib.models import (ATTN_IMPLS, CausalLM, HookPoint, TinyTransformer, gpt2_state_dict, pad_batch, tiny_gpt,
                             with_vocab)

V, D, L, H, T = 40, 16, 2, 4, 9


def _x(seed=0, B=3, T=T):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


def _model(**kw):
    return tiny_gpt(V, D, L, H, max_len=12, seed=0, **kw)


def _old_style_gpt2(V, D, L, H, max_len, seed):
    "transformers' GPT-2 exactly as the label-smoothing paper used to build it."
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=V, n_positions=max_len, n_embd=D, n_layer=L, n_head=H, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, bos_token_id=1, eos_token_id=1, pad_token_id=0, tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return GPT2LMHeadModel(cfg).eval()


@pytest.mark.parametrize("impl,use_result,split", [("sdpa", False, False), ("eager", False, False), ("sdpa", True, False), ("eager", True, False),
                                                   ("sdpa", True, True), ("eager", False, True)])
def test_hook_names_complete_and_cache_shapes(impl, use_result, split):
    m = _model(attn_impl=impl, use_attn_result=use_result, use_split_qkv_input=split, use_hook_mlp_in=split)
    logits, cache = m.run_with_cache(_x())
    names = m.hook_names()
    every = {n for n, mod in m.named_modules() if isinstance(mod, HookPoint)}
    inactive = ({'attn.hook_attn_scores', 'attn.hook_pattern'} if impl == "sdpa" else set()) | (set() if use_result else {'attn.hook_result'}) \
               | (set() if split else {'hook_q_input', 'hook_k_input', 'hook_v_input', 'hook_mlp_in'})
    assert set(names) == {n for n in every if not any(n.endswith(s) for s in inactive)}
    assert list(cache) == names and len(names) == len(set(names))          # every active hook fires once, in order
    B, dh, dm = 3, D // H, 4 * D
    for i in range(L):
        p = f"blocks.{i}."
        for n in ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"):
            assert cache[p + n].shape == (B, T, D)
        for n in ("attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_z"): assert cache[p + n].shape == (B, T, H, dh)
        assert cache[p + "mlp.hook_pre"].shape == cache[p + "mlp.hook_post"].shape == (B, T, dm)
        if impl == "eager": assert cache[p + "attn.hook_pattern"].shape == cache[p + "attn.hook_attn_scores"].shape == (B, H, T, T)
        if use_result: assert cache[p + "attn.hook_result"].shape == (B, T, H, D)
        if split:
            for n in ("hook_q_input", "hook_k_input", "hook_v_input"): assert torch.equal(cache[p + n], cache[p + "hook_resid_pre"][:, :, None].expand(B, T, H, D))
            assert torch.equal(cache[p + "hook_mlp_in"], cache[p + "hook_resid_mid"])
    if split: torch.testing.assert_close(logits, _model(attn_impl=impl)(_x()), atol=1e-5, rtol=1e-5)   # same model up to rounding
    assert cache['hook_embed'].shape == cache['hook_pos_embed'].shape == cache['hook_ln_final'].shape == (B, T, D)
    assert cache['hook_logits'].shape == logits.shape == (B, T, V)
    assert torch.equal(cache['blocks.0.hook_resid_pre'], cache['hook_embed'] + cache['hook_pos_embed'])
    assert torch.equal(cache['blocks.0.hook_resid_post'], cache['blocks.1.hook_resid_pre'])


@pytest.mark.parametrize("impl", ATTN_IMPLS)
def test_patching_a_head(impl):
    m = _model(attn_impl=impl); x = _x()
    clean, cache = m.run_with_cache(x)
    for layer in range(L):
        for h in range(H):
            def zero(z, hook, h=h): z = z.clone(); z[:, :, h] = 0; return z
            assert (m.run_with_hooks(x, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", zero)]) - clean).abs().max() > 1e-4
    same = m.run_with_hooks(x, fwd_hooks=[(n, lambda a, hook: cache[hook.name]) for n in m.hook_names()])
    assert torch.equal(same, clean)                                       # clean activations everywhere: bit-identical
    assert all(not mod.fns for mod in m.modules() if isinstance(mod, HookPoint))


def test_hooks_context_removes_hooks_even_on_error():
    m = _model(); calls = []
    with pytest.raises(RuntimeError):
        with m.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", lambda a, hook: calls.append(hook.name))]):
            m(_x()); raise RuntimeError("stop")
    assert calls == ["blocks.0.hook_resid_pre"] and not m.blocks[0].hook_resid_pre.fns
    with pytest.raises(KeyError, match="no hook point"): m.run_with_cache(_x(), names_filter="blocks.0.hook_nope")
    with pytest.raises(ValueError, match="attn_impl='eager'"): m.run_with_cache(_x(), names_filter="blocks.0.attn.hook_pattern")
    with pytest.raises(ValueError, match="must return None or a tensor"): m.run_with_hooks(_x(), fwd_hooks=[("hook_embed", lambda a, hook: a[:1])])


def test_per_head_contributions_sum_to_attn_out():
    m = _model(use_attn_result=True); plain = _model()
    logits, c = m.run_with_cache(_x())
    _, cp = plain.run_with_cache(_x())
    dh = D // H
    for i in range(L):
        res, attn = c[f"blocks.{i}.attn.hook_result"], m.blocks[i].attn
        assert torch.equal(res.sum(2) + attn.b_O, c[f"blocks.{i}.hook_attn_out"])
        z = c[f"blocks.{i}.attn.hook_z"]
        for h in range(H):
            torch.testing.assert_close(z[:, :, h] @ attn.W_O[h * dh:(h + 1) * dh], res[:, :, h], rtol=0, atol=1e-6)
    torch.testing.assert_close(c["blocks.0.hook_attn_out"], cp["blocks.0.hook_attn_out"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("impl", ATTN_IMPLS)
def test_causal(impl):
    m = _model(attn_impl=impl); x = _x()
    for t in range(T - 1):
        x2 = x.clone(); x2[:, t + 1:] = (x2[:, t + 1:] + 1 + torch.arange(T - t - 1)) % V
        with torch.no_grad(): a, b = m(x), m(x2)
        torch.testing.assert_close(a[:, :t + 1], b[:, :t + 1], rtol=0, atol=1e-6)
        assert (a[:, t + 1:] - b[:, t + 1:]).abs().max() > 1e-4


def test_eager_and_sdpa_agree_and_padding_is_invisible():
    a, b = _model(), _model(attn_impl="eager"); x = _x()
    lens = torch.tensor([T, 5, 2]); mask = torch.arange(T)[None] < lens[:, None]
    with torch.no_grad():
        torch.testing.assert_close(a(x), b(x), rtol=0, atol=1e-6)
        for m in (a, b):
            h = m.last_hidden(x, lens)
            for i, n in enumerate(lens.tolist()):
                torch.testing.assert_close(h[i], m.hidden(x[i:i + 1, :n])[0, -1], rtol=0, atol=1e-6)
            torch.testing.assert_close(m(x, mask)[mask], a(x, mask)[mask], rtol=0, atol=1e-6)


def test_same_weights_and_logits_as_the_old_gpt2_via_state_dict_mapping():
    pytest.importorskip("transformers")
    for (v, d, l, h, seed) in [(64, 32, 1, 4, 0), (300, 32, 2, 4, 7), (512, 128, 2, 4, 3)]:
        old = _old_style_gpt2(v, d, l, h, 32, seed)
        new = tiny_gpt(v, d, l, h, max_len=32, seed=seed)
        sd = gpt2_state_dict(old.state_dict(), l)
        assert sorted(sd) == sorted(new.state_dict())
        assert all(torch.equal(new.state_dict()[k], w) for k, w in sd.items())      # same seed -> same weights
        loaded = TinyTransformer(v, d, l, h, max_len=32, seed=None); loaded.load_state_dict(sd)
        x = torch.randint(0, v, (5, 20), generator=torch.Generator().manual_seed(1))
        am = (torch.arange(20)[None] < torch.tensor([20, 17, 9, 20, 3])[:, None]).long()
        with torch.no_grad():
            for mask in (None, am):
                real = torch.ones_like(x, dtype=torch.bool) if mask is None else mask.bool()
                ref = old(x, attention_mask=mask).logits[real]
                for impl in ATTN_IMPLS:
                    loaded.attn_impl = impl
                    diff = (loaded(x, mask)[real] - ref).abs().max().item()
                    assert diff <= 1e-6, (impl, diff)
                    if impl == "sdpa": assert diff == 0.0
                old_h = old.transformer(input_ids=x, attention_mask=am).last_hidden_state
                lens = am.sum(1)
                assert torch.equal(new.last_hidden(x, lens), old_h[torch.arange(5), lens - 1])


def test_training_steps_match_the_old_gpt2_bit_for_bit():
    pytest.importorskip("transformers")
    old, new = _old_style_gpt2(80, 32, 2, 4, 16, 5), tiny_gpt(80, 32, 2, 4, max_len=16, seed=5)
    po, pn = torch.optim.AdamW(old.parameters(), lr=1e-2), torch.optim.AdamW(new.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        x, lens = pad_batch([torch.randint(0, 80, (int(n),), generator=g) for n in torch.randint(2, 16, (8,), generator=g)])
        y = torch.randint(0, 80, (8,), generator=g)
        am = (torch.arange(x.shape[1])[None] < lens[:, None]).long()
        ho = old.transformer(input_ids=x, attention_mask=am).last_hidden_state[torch.arange(8), lens - 1]
        for opt, h, C in ((po, ho, old.lm_head.weight), (pn, new.last_hidden(x, lens), new.W_U)):
            opt.zero_grad(); F.cross_entropy(h @ C.T, y).backward(); opt.step()
    assert torch.equal(old.lm_head.weight, new.W_U) and torch.equal(old.transformer.h[1].mlp.c_fc.weight, new.blocks[1].mlp.W_in)


def test_with_vocab_and_interface():
    m = _model(); m2, m3 = with_vocab(m, 30), with_vocab(m, 50, seed=2)
    assert m2.vocab_size == 30 and torch.equal(m2.W_U, m.W_U[:30]) and m.vocab_size == V
    assert torch.equal(m3.W_U[:V], m.W_U) and torch.equal(m3.W_U, with_vocab(m, 50, seed=2).W_U)
    seqs = [[1, 2, 3, 4], [5, 6], [7]]
    P = m.next_token_probs(seqs, batch_size=2)
    assert P.shape == (3, V) and P.dtype == np.float64 and np.allclose(P.sum(1), 1, atol=1e-12)
    lp = m.logprobs(seqs)
    assert [len(a) for a in lp] == [3, 1, 0]
    np.testing.assert_allclose(lp[0], np.log([m.next_token_probs([seqs[0][:t]])[0, seqs[0][t]] for t in (1, 2, 3)]), atol=1e-6)
    with pytest.raises(ValueError, match="max_len"): m(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"): tiny_gpt(10, 30, 1, 4)


def _tiny_hf_folder(folder):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    words = ["<unk>", "<eos>", "the", "cat", "dog", "sat", "on", "mat", "a"]
    tk = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>")); tk.pre_tokenizer = WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>").save_pretrained(folder)
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_positions=16, n_embd=32, n_layer=1, n_head=2,
                               bos_token_id=1, eos_token_id=1)).save_pretrained(folder)


def test_causal_lm_offline_on_a_tiny_random_gpt2(tmp_path, offline_env):
    pytest.importorskip("transformers")
    _tiny_hf_folder(tmp_path)
    lm = CausalLM(str(tmp_path), device="cpu")
    assert lm._model is None                                               # lazy
    assert lm.vocab_size == 9 and lm._model is not None
    assert lm.encode("the cat sat") == [2, 3, 5] and lm.decode([2, 3, 5]) == "the cat sat"
    assert lm.first_token(" dog") == 4 and lm.stop_ids == (1,)
    prompts = ["the cat sat on", "a dog", "mat"]
    P = lm.next_token_probs(prompts, batch_size=2)
    assert P.shape == (3, 9) and np.allclose(P.sum(1), 1, atol=1e-12)
    for i, p in enumerate(prompts):
        with torch.no_grad(): ref = torch.softmax(lm.model(torch.tensor([lm.encode(p)])).logits[0, -1].double(), -1).numpy()
        np.testing.assert_allclose(P[i], ref, atol=1e-6)
    twin = TinyTransformer.from_gpt2(lm.model)
    ids = [lm.encode(p) for p in prompts]
    np.testing.assert_allclose(twin.next_token_probs(ids), P, atol=1e-6)
    for a, b in zip(twin.logprobs(ids), lm.logprobs(prompts)): np.testing.assert_allclose(a, b, atol=1e-6)


def test_causal_lm_missing_weights_raise_resource_unavailable(tmp_path, offline_env):
    pytest.importorskip("transformers")
    lm = CausalLM(str(tmp_path / "nothing"))                               # constructing loads nothing
    with pytest.raises(ResourceUnavailable, match="could not be loaded offline"): lm.load()
    with pytest.raises(ResourceUnavailable, match="allow_download=True"): lm.next_token_probs(["x"])
