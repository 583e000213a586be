"""`--model huggingface:<folder>` with a real model folder, built offline (opt-in:
`pytest -m local_model`).

A tiny random-weight Llama (one layer, 32 wide) is saved with `save_pretrained`, beside a
byte-level BPE tokenizer trained here with the `tokenizers` library and wrapped in
`PreTrainedTokenizerFast` (with a chat template): a folder as a user's fine-tune or download
is laid out. LangChain's `init_chat_model("huggingface", ...)` loads it through transformers'
pipeline into `ChatHuggingFace`, and it writes the summaries of a sweep and answers the probes
of an evaluation from the CLI. Nothing is downloaded (`HF_HUB_OFFLINE=1`). It needs torch,
transformers and langchain-huggingface (with torch, about 1 GB: not in the test extra), so it
is behind the `local_model` marker with the SmolLM2 test and skips, saying what to install,
without them.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from ctxlab._cli.main import main
from ctxlab._store.store import Store
from tests.test_sweep_models import chats  # noqa: F401 - the fixture

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers or huggingface_hub is imported
os.environ["TRANSFORMERS_OFFLINE"] = "1"

NEEDS = ("torch", "transformers", "tokenizers", "langchain_huggingface")
MISSING = [name for name in NEEDS if importlib.util.find_spec(name) is None]

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs {', '.join(MISSING)}: pip install torch==2.13.0 transformers "
        "langchain-huggingface",
    ),
]

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama and its tokenizer, saved as a Hugging Face model folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tiny-llama")
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = ["the agent read the file, ran the tests and fixed the loader", "trace step word"]
    tok.train_from_iterator(corpus * 50, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    tokenizer.pad_token = "</s>"
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=16_384,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config.do_sample = False
    model.generation_config.max_new_tokens = 8
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_a_model_folder_writes_a_sweeps_summaries_and_answers_probes(
    folder: Path,
    chats: list[Path],  # noqa: F811 - the fixture
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    spec = f"huggingface:{folder}"
    store = tmp_path / "s.duckdb"
    sweep = ["sweep", str(chats[0]), "--db", str(store), "--policy", "deepagents"]
    sweep += ["--window", "8000", "--grid", "trigger=fraction:0.5", "--model", spec]
    assert main([*sweep, "--workers", "1", "--format", "json"]) == 0, capsys.readouterr().err
    (row,) = json.loads(capsys.readouterr().out)
    assert row["events"] > 0
    summaries = Store(store).summaries()
    assert summaries and all(text.strip() for text in summaries.values())

    evaluate = ["evaluate", str(chats[0]), "--policy", "deepagents", "--window", "8000"]
    evaluate += ["--model", spec, "--max-calls", "4", "--store", str(store), "--format", "json"]
    assert main(evaluate) == 0, capsys.readouterr().err
    (result,) = json.loads(capsys.readouterr().out)["evaluations"]
    assert result["probes"] and not result["failed"]
    assert all(p["error"] is None for p in result["probes"])
    assert Store(store).query("SELECT count(*) AS n FROM probe_cache")["n"][0] >= 1
