"""The model's weights, read by attncli and never mapped into memory (issue 26).

transformers and safetensors map a ``.safetensors`` file into memory; a file cut short while it is mapped ends
the process with SIGBUS (exit 135, nothing said).  Here every tensor of the checkpoint is read with attncli's own
reader (:func:`attncli.inputs.tensorfiles.read_every_tensor`, which reads and never maps), in its stored dtype,
and handed to transformers as the ``state_dict`` of ``from_pretrained``: the same loading as from the folder (the
same renamed keys, tied weights, buffers, dtype conversion, missing and unexpected keys, eval mode), without a map.
"""

from __future__ import annotations

import math
from typing import Any

from attncli.core.errors import AttnError, quoted
from attncli.core.memory import ensure_fits, size_text
from attncli.inputs.tensorfiles import read_every_tensor
from attncli.models.loading import INDEX, Folder, _first_line

WEIGHTS = "model.safetensors"  # transformers' name for the weights of a folder without an index of shards


def checkpoint_files(folder: Folder) -> list:
    """The files transformers would load: the shards the index names, else ``model.safetensors``."""
    if (folder.path / INDEX).is_file():
        return sorted(set(folder.tensors.values()))
    if not (folder.path / WEIGHTS).is_file():
        names = sorted({file.name for file in folder.tensors.values()})
        raise AttnError("weights.has_no_nor_weights_transformers", folder.name, weights=WEIGHTS, index=INDEX,
                        names=', '.join(names[:3]), value=' …' if len(names) > 3 else '')
    return [folder.path / WEIGHTS]


def state_dict(torch: Any, folder: Folder, dtype: str) -> dict[str, Any]:
    """Every tensor of the checkpoint as a CPU tensor in its stored dtype, read (never mapped); refused before
    anything is read when the stored bytes and the model in ``dtype`` would not fit in memory together."""
    files = checkpoint_files(folder)
    stored = sum(file.stat().st_size for file in files)
    cells = sum(math.prod(shape) for shape in folder.shapes.values())
    ensure_fits(stored + cells * torch.empty((), dtype=getattr(torch, dtype)).element_size(),
                f"loading the model ({size_text(stored)} of weights, read and then converted to {dtype})", folder.name)
    views = {"BF16": torch.bfloat16, "BOOL": torch.bool}
    state = {}
    for file in files:
        for name, (kind, values) in read_every_tensor(file, f"{folder.name}/{file.name}").items():
            tensor = torch.from_numpy(values)
            state[name] = tensor.view(views[kind]) if kind in views else tensor
    return state


def load_model(torch: Any, transformers: Any, folder: Folder, kind: str, dtype: str, config: Any) -> Any:
    """The model (``kind``: AutoModel, or a class of transformers) in ``dtype``, with the eager attention, its
    weights read by :func:`state_dict` (``config``: the folder's, as AutoConfig reads it)."""
    state = state_dict(torch, folder, dtype)
    cls = getattr(transformers, kind)
    try:
        if hasattr(cls, "_model_mapping"):  # an Auto class: from_pretrained(None, ...) needs the model's own class
            from transformers.models.auto.auto_factory import _get_model_class

            cls = _get_model_class(config, cls._model_mapping)
        model, info = cls.from_pretrained(None, config=config, state_dict=state, dtype=getattr(torch, dtype),
                                          attn_implementation="eager", local_files_only=True, output_loading_info=True,
                                          experts_implementation="eager")  # (MoE: grouped_mm has no float64)
    except Exception as e:
        raise AttnError("weights.model_cannot_loaded_from_folder", folder.name, first_line=_first_line(e)) from None
    del state
    model.config._name_or_path = str(folder.path)  # (as from_pretrained(folder) sets it)
    missing = [key for key in info.get("missing_keys", ()) if not key.startswith("pooler.")]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise AttnError("weights.checkpoint_has_no_tensor_which", folder.name, sorted=quoted(sorted(missing)[0], 60),
                        more=more)
    return model.eval()
