"""``attncli extract``: one attention layer of a model folder, on a sentence, as a document that computes it.

The model runs on the sentence (:mod:`attncli.models.capture`); the document holds the tokens, the layer's input
X (an ``.npy`` beside it) and references into the checkpoint's own ``.safetensors`` for every weight, bias and
norm (no copy); it is then read back with attncli's reader, computed with attncli's core, and compared with the
model's attention probabilities, its attention output and what the model adds back (the residual, the
Add & Norm). A document that does not reproduce the model is refused.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, quoted, shorten
from attncli.models import capture, loading, weights
from attncli.models.families import family_of
from attncli.models.family import Param, Plan
from attncli.models.render import render

TOLERANCE = {"float64": 1e-8, "float32": 1e-4}  # max |difference| allowed (float32: relative to the largest value)
# parts of a parameter's name that a checkpoint spells otherwise (transformers renames them on loading:
# conversion_mapping.py, Kimi Linear's forget gate)
RENAMED = ((".forget_gate.", "."),)
# the Trace's keys, as the model has them
COMPARED = ("weights", "normalized_inputs", "output", "residual", "normalized")


@dataclass
class Agreement:
    key: str
    difference: float
    shape: tuple[int, ...]
    module: str  # the module (or output) of the model it was compared with


@dataclass
class Extracted:
    document: bytes
    inputs: bytes  # the .npy of X
    agreement: list[Agreement]
    summary: str  # one line: which model, which layer, how many tokens, which dtype
    files: set[Path]  # the model folder's files: no output may replace one


def extract(model: str, text: str, layer: int, output: Path, dtype: str = "float64", stack: str | None = None,
            source: str = "--text", progress: Callable[[str], None] = lambda step: None) -> Extracted:
    """Layer ``layer`` (from 0) of the model in the folder ``model``, on ``text``, as the document ``output``.

    ``source``: where the text came from, for the messages about it (``--text``, or the file ``--text-file`` named);
    ``progress(step)``: told what is being done, before each slow step.
    """
    if not text.strip():
        raise AttnError("extract.empty_give_sentence_run_model", source)
    if dtype not in TOLERANCE:
        raise AttnError("extract.not_float64_float32", "--dtype", dtype=quoted(dtype))
    folder = loading.open_folder(model)
    family, stack = family_of(folder.model_type, stack, model)
    if (told := loading.layer_count(folder.config, stack)) is not None:  # config.json alone, before PyTorch loads
        _check_layer(layer, told, stack, folder.model_type)
    progress("importing PyTorch and transformers")
    torch, transformers = loading.require()
    config = _config(transformers, folder, model)
    count = family.layers(config)
    _check_layer(layer, count, stack, folder.model_type)
    progress("loading the tokenizer")
    tokenizer = loading.load_tokenizer(transformers, folder)
    encoded = tokenizer(text, return_tensors="pt")
    progress(f"loading the model in {dtype}")
    net = weights.load_model(torch, transformers, folder, family.model_class, dtype, config)
    try:
        plan = family.plan(config, net, layer, stack)
    except AttnError as e:  # a variant of the family that a document cannot write
        raise e.at(f"{model}/config.json") from None
    n = encoded["input_ids"].shape[1]
    _check_length(n, plan.limit, source)
    inputs, ids = _model_inputs(encoded, folder.model_type, stack, net)
    tokens = [str(t) for t in tokenizer.convert_ids_to_tokens(ids[0].tolist())]
    where = (f"{stack} " if folder.model_type == "t5" else "") + f"layer {layer}"
    entering = f"{where}'s {'linear ' if plan.linear else ''}attention (after its input norm)" \
        if plan.linear or plan.after_norm else where
    progress(f"running the model on {n} tokens")
    try:
        caught = capture.run(torch, net, plan, inputs, dtype == "float64", family.attentions, layer)
    except AttnError as e:
        raise e.at(f"{model}: {where}") from None
    x = caught.pop("inputs")
    keys = {name: _references(value, folder, net, output.parent) for name, value in plan.keys.items()}
    summary = f"{folder.name}: {folder.model_type}, {where} of 0–{count - 1}, {n} tokens, {dtype}"
    npy_name = output.with_suffix(".npy").name

    def document(agreement: list[Agreement]) -> str:
        return render(keys, tokens, npy_name, x.shape, text, summary, [(a.key, a.difference) for a in agreement],
                      entering)

    progress("computing the document and comparing it with the model")
    try:
        agreement = _compare(document([]), x, output, caught, plan, dtype)
    except AttnError as e:
        raise e.at(f"{model}: {where}") from None
    buffer = io.BytesIO()
    np.save(buffer, x.astype(np.float64), allow_pickle=False)
    return Extracted(document(agreement).encode("utf-8"), buffer.getvalue(), agreement, summary, folder.files())


def _compare(text: str, x: np.ndarray, output: Path, caught: dict[str, np.ndarray], plan: Plan,
             dtype: str) -> list[Agreement]:
    """The document as written, read back (its X from memory) and computed; every key against the model's."""
    from attncli.inputs.document import Document, parse_text

    data = parse_text(text, str(output))
    data["inputs"] = x.astype(np.float64)
    doc = Document(data, str(output), output.parent.resolve())
    if plan.linear:  # a linear: document (docs/format.md Part 4): its output Y is compared
        from attncli.core.linear import run
        from attncli.inputs.linear import read_linear

        linear = run(read_linear(doc), keep_state=False)
        return [_agree("output", linear["output"], caught["output"], f"output of {plan.output}", dtype)]
    from attncli.core.pipeline import attend
    from attncli.inputs.builder import build_spec

    trace = attend(build_spec(doc))
    modules = {"weights": "the model's output_attentions", "normalized_inputs": f"output of {plan.pre_norm}",
               "output": f"output of {plan.output}", "normalized": f"output of {plan.normalized}"}
    if plan.residual:
        modules["residual"] = f"{plan.residual[1]} of {plan.residual[0]}"
    found = []
    for key in COMPARED:
        if key not in caught:
            continue
        found.append(_agree(key, getattr(trace, key), caught[key], str(modules[key]), dtype))
    return found


def _agree(key: str, ours: np.ndarray | None, theirs: np.ndarray, module: str, dtype: str) -> Agreement:
    """How far the document's ``key`` is from the model's; farther than the tolerance is an error."""
    if ours is None or ours.shape != theirs.shape:
        raise AttnError("extract.document_gives_shape_model_bug", key=key, value=None if ours is None else ours.shape,
                        shape=theirs.shape)
    difference = float(np.max(np.abs(ours - theirs)))
    scale = max(1.0, float(np.max(np.abs(theirs)))) if dtype == "float32" else 1.0
    if not difference <= TOLERANCE[dtype] * scale:  # (NaN too)
        raise AttnError("extract.document_does_not_reproduce_model", key=key, difference=difference, module=module,
                        tolerance=TOLERANCE[dtype] * scale)
    return Agreement(key, difference, theirs.shape, module)


def _config(transformers: Any, folder: loading.Folder, model: str) -> Any:
    """The model's configuration, read from its folder's config.json by transformers."""
    try:
        return transformers.AutoConfig.from_pretrained(str(folder.path), local_files_only=True)
    except Exception as e:
        raise AttnError("extract.cannot_read_config",
                        f"{model}/config.json", model_type=folder.model_type,
                        first_line=loading._first_line(e)) from None


def _check_layer(layer: int, count: int, stack: str | None, model_type: str) -> None:
    """``layer`` (from 0) is one of the model's ``count`` layers (of ``stack``, for T5)."""
    if not 0 <= layer < count:
        which = f"{stack} layers" if model_type == "t5" else "layers"
        raise AttnError("extract.out_range_this_model_s", "--layer", layer=shorten(layer), model_type=model_type,
                        which=which, count=count - 1)


def _check_length(n: int, limit: int | None, source: str) -> None:
    """The sentence's ``n`` tokens: at least one, and no more than the model has positions for."""
    if n == 0:
        raise AttnError("extract.gives_no_tokens_this_model", source)
    if limit is not None and n > limit:
        raise AttnError("extract.tokens_long_more_than_positions", source, n=n, limit=limit)


def _model_inputs(encoded: Any, model_type: str, stack: str | None, net: Any) -> tuple[dict[str, Any], Any]:
    """What the model runs on, and the ids of the tokens the layer sees (the decoder's own, for T5's decoder)."""
    ids = encoded["input_ids"]
    inputs: dict[str, Any] = {"input_ids": ids, "attention_mask": encoded["attention_mask"]}
    if "token_type_ids" in encoded and model_type in ("bert", "roberta"):
        inputs["token_type_ids"] = encoded["token_type_ids"]
    if stack == "decoder":  # the sentence as the decoder reads it in training: shifted right behind the start token
        inputs["decoder_input_ids"] = net._shift_right(ids)
        ids = inputs["decoder_input_ids"]
    return inputs, ids


def _references(value: Any, folder: loading.Folder, net: Any, doc_folder: Path) -> Any:
    """The plan's keys with each :class:`Param` as a ``{file, tensor, layout, columns}`` mapping into the checkpoint."""
    if isinstance(value, Param):
        return _reference(value, folder, net, doc_folder)
    if isinstance(value, dict):
        return {k: _references(v, folder, net, doc_folder) for k, v in value.items()}
    if isinstance(value, list) and any(isinstance(v, Param) for v in value):  # (a product's factors)
        return [_references(v, folder, net, doc_folder) for v in value]
    return value


def _reference(param: Param, folder: loading.Folder, net: Any, doc_folder: Path) -> dict[str, Any]:
    shape = tuple(net.get_parameter(param.name).shape)
    name = _tensor_name(param.name, folder, getattr(net, "base_model_prefix", ""))
    if folder.shapes[name] != shape:
        raise AttnError("extract.tensor_checkpoint_but_model", folder.name, name=quoted(name, 60),
                        shapes=folder.shapes[name], shape=shape)
    reference: dict[str, Any] = {"file": _relative(folder.tensors[name], folder, doc_folder), "tensor": name}
    if param.layout != "rows":
        reference["layout"] = param.layout
    if param.columns:
        reference["columns"] = list(param.columns[0]) if len(param.columns) == 1 else [list(c) for c in param.columns]
    return reference


def _relative(file: Path, folder: loading.Folder, doc_folder: Path) -> str:
    """``file`` (resolved) as the document names it: relative to the document's folder, as ``inputs:`` is, through
    the links the user named where that reaches it (``minilm/model.safetensors`` for a link ``minilm`` beside the
    document), else through the real folders. The document and the model can then move together."""
    here, real = Path(os.path.abspath(doc_folder)), doc_folder.resolve()
    named = file
    if folder.named is not None and folder.path in file.parents:
        named = folder.named / file.relative_to(folder.path)
    for start, target in ((here, named), (real, named), (real, file)):
        try:
            relative = os.path.relpath(target, start)
            if os.path.samefile(real / relative, file):  # read as the reader reads it: from the real folder
                return relative
        except (OSError, ValueError):  # (another drive, on Windows)
            continue
    return str(file)


def _tensor_name(name: str, folder: loading.Folder, prefix: str) -> str:
    """The checkpoint's name of the model's parameter ``name``: as it is, under the base model's prefix, or with
    the old LayerNorm names (gamma, beta)."""
    candidates = [name, f"{prefix}.{name}"] if prefix else [name]
    if prefix and name.startswith(prefix + "."):
        candidates.append(name[len(prefix) + 1:])
    if "LayerNorm" in name or "layer_norm" in name:
        candidates += [c.replace(".weight", ".gamma").replace(".bias", ".beta") for c in candidates]
    for model_part, stored in RENAMED:
        if model_part in name:
            candidates += [c.replace(model_part, stored) for c in candidates]
    for candidate in candidates:
        if candidate in folder.tensors:
            return candidate
    raise AttnError("extract.checkpoint_has_no_tensor_model", folder.name, name=quoted(name, 60))
