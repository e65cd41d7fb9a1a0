"""A model folder in the Hugging Face layout, opened without downloading anything.

The folder is checked with the standard library first (``config.json``, its
``model_type``, the ``.safetensors`` files and the names of the tensors in them);
then PyTorch and transformers are imported (:func:`require`), with the hub's
offline switches set, and the tokenizer is loaded from the folder alone (the model
by :mod:`attncli.models.weights`, its weights read by attncli, never mapped).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncli.core.errors import AttnError, shorten
from attncli.inputs.reading import file_status

INSTALL = "pip install 'attncli[models]'"
MIN_TRANSFORMERS = (5, 23)  # rope_parameters, the eager attention interfaces, output_attentions by hooks
HEADER_LIMIT = 100_000_000  # bytes of a .safetensors header (the safetensors package's limit)
INDEX = "model.safetensors.index.json"
WRITTEN = (".yaml", ".yml", ".npy")  # what extract writes: never read when the model is loaded


@dataclass
class Folder:
    """What the folder holds: its config, and where each tensor of its checkpoint is."""

    name: str  # as the user gave it, for messages
    path: Path  # resolved
    config: dict[str, Any]
    tensors: dict[str, Path] = field(default_factory=dict)  # tensor name -> its .safetensors file
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    named: Path | None = None  # absolute, through the links the user named (``path`` with them resolved)

    @property
    def model_type(self) -> str:
        return str(self.config.get("model_type", ""))

    def files(self) -> set[Path]:
        """The folder's files, inputs of the run, which no output may replace: all but the documents and arrays
        extract writes (.yaml, .npy), which loading a model never reads (a layer extracted into the folder before)."""
        return {p.resolve() for p in self.path.rglob("*") if p.is_file() and p.suffix.lower() not in WRITTEN}


def open_folder(model: str) -> Folder:
    """The folder ``model`` with its config and tensor names, or one clear error."""
    if model == "":
        raise AttnError("loading.folder_name_empty_give_model", "MODEL")
    path = Path(model).expanduser()
    if not path.exists():
        hub = "" if os.sep in model or model.startswith(".") else (
            f"; a name on the Hugging Face Hub is not fetched: download the folder first (hf download {shorten(model)} "
            "--local-dir DIR) and give DIR")
        raise AttnError("loading.no_such_folder_extract_reads", model, hub=hub)
    if not path.is_dir():
        raise AttnError("loading.not_folder_give_model_s", model)
    _no_special_files(path, model)
    config_path = path / "config.json"
    if not config_path.is_file():
        raise AttnError("loading.has_no_config_json_not", model)
    config = _json(config_path, f"{model}/config.json")
    if not isinstance(config, dict):
        raise AttnError("loading.not_json_object", f"{model}/config.json")
    folder = Folder(model, path.resolve(), config, named=Path(os.path.abspath(path)))
    _find_tensors(folder)
    return folder


LAYER_KEYS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers")  # as config.json names the count


def layer_count(config: dict[str, Any], stack: str) -> int | None:
    """The number of layers config.json gives (of T5's ``stack``), read without transformers; None when it does not
    say it plainly (then transformers' reading decides)."""
    if not any(key in config for key in LAYER_KEYS) and isinstance(config.get("text_config"), dict):
        config = config["text_config"]  # a multimodal model's language part
    keys = ("num_decoder_layers", *LAYER_KEYS) if stack == "decoder" else LAYER_KEYS
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


JSON_LIMIT = 64 * 1024 * 1024  # bytes of config.json or of the index of shards (a large index has some 100 kB)


def _no_special_files(path: Path, model: str) -> None:
    """Every file of the folder is a regular file (or a link to one), checked before anything is opened: transformers
    reads the folder's files by their names, and a named pipe there would make it (or us) wait for ever, a device
    (a link to /dev/zero) read without end."""
    try:
        entries = list(os.scandir(path))
    except OSError as e:
        raise AttnError("archives.cannot_read", model, value=e.strerror or type(e).__name__) from None
    for entry in entries:
        try:
            mode = entry.stat().st_mode  # (through links)
        except OSError:  # a dangling link, a loop: transformers says so if it needs the file
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            _regular(Path(entry.path), f"{model}/{entry.name}")


def _regular(file: Path, where: str) -> None:
    """A regular file (through its links): anything else is one clear error, before the file is opened."""
    if not stat.S_ISREG(file_status(file, where, "a file").st_mode):
        raise AttnError("loading.not_regular_file_named_pipe", where)


def _json(file: Path, where: str) -> Any:
    _regular(file, where)
    try:
        with file.open("rb") as f:
            raw = f.read(JSON_LIMIT + 1)
        if len(raw) > JSON_LIMIT:
            raise AttnError("loading.larger_than_mib_not_model", where, json_limit=JSON_LIMIT >> 20)
        return json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise AttnError("loading.cannot_read_json",
                        where, splitlines=shorten(str(e).splitlines()[0] if str(e) else type(e).__name__, 80)) from None


def _find_tensors(folder: Folder) -> None:
    """``tensors`` and ``shapes`` from the index of a sharded checkpoint, or from every ``*.safetensors`` file."""
    index = folder.path / INDEX
    if index.is_file():
        where = f"{folder.name}/{INDEX}"
        data = _json(index, where)
        try:
            shards = {name: folder.path / file for name, file in data["weight_map"].items()}
        except (KeyError, TypeError, AttributeError):
            raise AttnError("loading.not_index_safetensors_shards_json", where) from None
        files = sorted(set(shards.values()))
    else:
        files = sorted(folder.path.glob("*.safetensors"))
    if not files:
        pickles = [p.name for p in folder.path.glob("*.bin")] + [p.name for p in folder.path.glob("*.pt")]
        why = (f"only {pickles[0]} (a Python pickle, which attncli never reads); save the model again with "
               "save_pretrained(folder, safe_serialization=True)") if pickles else "no weights"
        raise AttnError("loading.has_no_safetensors_weights_holds", folder.name, why=why)
    for file in files:
        for name, shape in _header(file, folder.name).items():
            folder.tensors[name], folder.shapes[name] = file, shape


def _header(file: Path, model: str) -> dict[str, tuple[int, ...]]:
    """The tensor names and shapes a .safetensors file's header lists (the tensors are read later, by attncli)."""
    where = f"{model}/{file.name}"
    if not os.path.lexists(file):
        raise AttnError("loading.named_index_but_missing", where)
    _regular(file, where)  # (a shard the index names may be anywhere: a pipe, a device, a folder)
    try:
        with file.open("rb") as f:
            length = int.from_bytes(f.read(8), "little")
            if not 2 <= length <= HEADER_LIMIT:
                raise ValueError
            table = json.loads(f.read(length))
        return {name: tuple(entry["shape"]) for name, entry in table.items() if name != "__metadata__"}
    except OSError as e:
        raise AttnError("archives.cannot_read", where, value=e.strerror or type(e).__name__) from None
    except (ValueError, UnicodeDecodeError, TypeError, KeyError, AttributeError):
        raise AttnError("loading.not_safetensors_file_header_cannot", where) from None


def require() -> tuple[Any, Any]:
    """PyTorch and transformers, imported offline and quiet; without them, what to install."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported: the hub is never asked
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        import transformers
    except ImportError as e:
        missing = {"torch": "PyTorch", "transformers": "transformers"}.get((e.name or "").split(".")[0], e.name)
        raise AttnError("loading.needs_pytorch_hugging_face_transformers",
                        "extract", missing=missing, install=INSTALL) from None
    version = tuple(int(part) for part in transformers.__version__.split(".")[:2] if part.isdigit())
    if version < MIN_TRANSFORMERS:
        raise AttnError("loading.needs_transformers_later_installed_pip", "extract",
                        map='.'.join(map(str, MIN_TRANSFORMERS)), version=transformers.__version__)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return torch, transformers


TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "tokenizer.model",
                   "sentencepiece.bpe.model")


def load_tokenizer(transformers: Any, folder: Folder) -> Any:
    if not any((folder.path / name).is_file() for name in TOKENIZER_FILES):  # (transformers would make an empty one)
        raise AttnError("loading.has_no_tokenizer_none", folder.name, tokenizer_files=', '.join(TOKENIZER_FILES))
    try:
        return transformers.AutoTokenizer.from_pretrained(str(folder.path), local_files_only=True)
    except Exception as e:  # transformers raises many kinds here (OSError, ValueError, its own)
        raise AttnError("loading.tokenizer_cannot_loaded_from_folder", folder.name, first_line=_first_line(e)) from None


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return shorten(text[0] if text else type(e).__name__, 160)
