"""Model files trust nothing they read (issue 15): malformed headers are one ModelFileError line, a digest
detects corruption, and info shows the ledger recomputed from its events with flags."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from dpsynth.cli import main
from dpsynth.errors import ModelFileError
from dpsynth.models import get_model_class, load_model
from dpsynth.models._file import META_KEY, content_digest


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 9, 3000), "b": rng.choice(["x", "y"], 3000)})
    path = tmp_path_factory.mktemp("m") / "m.dpsynth"
    get_model_class("marginals")().fit(frame, epsilon=1.0, delta=1e-5, seed=0).save(path)
    return path


def _header(path):
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return json.loads(f.metadata()[META_KEY])


def _rewrite(src, dst, header, *, fix_digest=True):
    tensors = load_file(str(src))
    if fix_digest and isinstance(header, dict):
        header["digest"] = content_digest(header, tensors)
    save_file(tensors, str(dst), metadata={META_KEY: json.dumps(header)})


def test_a_saved_model_carries_a_digest_that_detects_an_edit(saved, tmp_path):
    header = _header(saved)
    assert header["digest"].startswith("sha256:")
    header["metadata"]["n_rows"] += 1  # an edit without recomputing the digest
    _rewrite(saved, tmp_path / "edited.dpsynth", header, fix_digest=False)
    with pytest.raises(ModelFileError, match="digest mismatch"):
        load_model(tmp_path / "edited.dpsynth")


MUTATIONS = {
    "header is a list": lambda h: [h],
    "no ledger": lambda h: {k: v for k, v in h.items() if k != "ledger"},
    "no schema": lambda h: {k: v for k, v in h.items() if k != "schema"},
    "count is text": lambda h: _set(h, ["ledger", "entries", 0, "count"], "three"),
    "negative count": lambda h: _set(h, ["metadata", "histograms", "a", "counts", 0], -5.0),
    "short histogram": lambda h: _set(h, ["metadata", "histograms", "b", "counts"], [1.0]),
    "unknown param": lambda h: _set(h, ["params", "bins"], 3),
    "param of the wrong type": lambda h: _set(h, ["params", "reuse_metadata"], "yes"),
    "params as a list": lambda h: _set(h, ["params"], [1, 2]),
    "n_rows negative": lambda h: _set(h, ["metadata", "n_rows"], -1.0),
    "state histograms missing": lambda h: _set(h, ["state"], {}),
}


def _set(header, keys, value):
    node = header
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return header


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_malformed_headers_are_one_model_file_error(saved, tmp_path, name, capsys):
    path = tmp_path / "bad.dpsynth"
    _rewrite(saved, path, MUTATIONS[name](_header(saved)))
    with pytest.raises(ModelFileError) as info:
        load_model(path)
    assert "\n" not in str(info.value)
    for command in (["sample", str(path), "-o", str(tmp_path / "s.csv")], ["info", str(path)],
                    ["info", str(path), "--json"]):
        code = main(command)
        err = capsys.readouterr().err
        if code != 0:  # info may read a file whose tensors/state are wrong: only the ledger matters to it
            assert code == 2 and err.startswith("dpsynth: error:") and "Traceback" not in err


@settings(max_examples=40, deadline=None, derandomize=True)
@given(key=st.sampled_from(["model", "params", "schema", "ledger", "metadata", "state", "format_version", "fit"]),
       value=st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
def test_any_field_replaced_by_junk_is_refused_in_one_line(saved, tmp_path_factory, key, value):
    assume(not (key == "fit" and (value is None or isinstance(value, dict))))  # optional: any object or null
    assume(not (key == "params" and value == {}))  # no params: the defaults, a valid model
    path = tmp_path_factory.mktemp("junk") / "j.dpsynth"
    header = _header(saved)
    header[key] = value
    _rewrite(saved, path, header)
    with pytest.raises(ModelFileError) as info:
        load_model(path)
    assert "\n" not in str(info.value)


def test_info_recomputes_the_ledger_and_flags_a_doctored_summary(saved, tmp_path, capsys):
    header = _header(saved)
    header["ledger"]["epsilon"] = 0.01  # the stored summary lies; the events say ~1
    header["ledger"]["entries"][0]["phase"] = "mystery"
    path = tmp_path / "doctored.dpsynth"
    _rewrite(saved, path, header)
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert 0.9 < info["ledger"]["epsilon"] <= 1.0
    flags = " | ".join(info["ledger_flags"])
    assert "stored summary says epsilon 0.01" in flags and "'mystery'" in flags
    assert main(["info", str(path)]) == 0
    assert "WARNING: the stored summary" in capsys.readouterr().out


def test_info_flags_a_ledger_over_its_target(saved, tmp_path, capsys):
    header = _header(saved)
    header["ledger"]["target_epsilon"] = 0.5  # events worth ~1 against a target of 0.5
    path = tmp_path / "over.dpsynth"
    _rewrite(saved, path, header)
    assert main(["info", str(path), "--json"]) == 0
    assert any("exceeds the ledger's target" in f for f in json.loads(capsys.readouterr().out)["ledger_flags"])


def test_a_dp_auto_gan_file_from_before_the_rename_still_loads(tmp_path):
    """Files written with the old names (ae_steps, ae_budget_share, critic_lr, ...) and the old state key
    ("training") load, sample the same rows, and report the new names."""
    from dpsynth import DPAutoGAN

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.normal(size=3000), "b": rng.choice(["x", "y"], 3000)})
    model = DPAutoGAN(**DPAutoGAN.fast_params).fit(frame, epsilon=1.0, delta=1e-5, seed=0)
    new = model.save(tmp_path / "new.dpsynth")
    header = _header(new)
    old_names = {v: k for k, v in DPAutoGAN.renamed_params.items() if v is not None}
    header["params"] = {old_names.get(k, k): v for k, v in header["params"].items()
                        if k not in ("autoencoder_epochs", "gan_epochs")}
    header["params"].update(ae_steps=30, critic_steps=30)
    header["state"]["training"] = header["state"].pop("budget")
    _rewrite(new, tmp_path / "old.dpsynth", header)
    old = load_model(tmp_path / "old.dpsynth")
    assert "ae_budget_share" in header["params"] and old.autoencoder_share == model.autoencoder_share
    assert old.critic_learning_rate == model.critic_learning_rate and "ae_steps" not in old.get_params()
    pd.testing.assert_frame_equal(old.sample(50, seed=2), model.sample(50, seed=2))
