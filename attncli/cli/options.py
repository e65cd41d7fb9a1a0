"""The options several commands share, declared once so they read the same everywhere."""

import os
import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"
    csv = "csv"


class TableOrJson(str, Enum):
    """--format of explain and check: the text with its tables, or one JSON object."""

    table = "table"
    json = "json"


class Lang(str, Enum):
    en = "en"
    zh = "zh"


class DType(str, Enum):
    """check's --dtype and compute's --emulate: the kernel's precision."""

    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"


# -o FILE's extension picks compute's format (unless --format is given, which must then agree): the format, and how
# the file is made: "text" (what the format prints), "picture" (the tables drawn as --export draws them) or "arrays".
# Any other extension, or none, takes --format (default: table). (A raster picture, .png, goes in here and in
# attncli.views.picture's EXPORT_KINDS when the views can draw one.)
BY_EXTENSION: dict[str, tuple[OutputFormat | None, str]] = {
    ".json": (OutputFormat.json, "text"), ".csv": (OutputFormat.csv, "text"), ".md": (OutputFormat.markdown, "text"),
    ".tex": (OutputFormat.latex, "text"), ".txt": (OutputFormat.table, "text"), ".svg": (OutputFormat.table, "picture"),
    ".html": (OutputFormat.table, "picture"), ".htm": (OutputFormat.table, "picture"), ".npy": (None, "arrays"),
    ".npz": (None, "arrays"),
}


def output_format(given: Optional[OutputFormat],
                  output: Optional[Path]) -> tuple[OutputFormat, str, Optional[Exception]]:
    """compute's format and how its result is written (see :data:`BY_EXTENSION`): --format, or -o's extension; and
    the error to raise when --format contradicts the extension (``-o x.json --format csv``), else None."""
    from attncli.core.errors import AttnError, shorten

    suffix = output.suffix.lower() if output is not None else ""
    implied, medium = BY_EXTENSION.get(suffix, (None, "text"))
    if given is None:
        return implied or OutputFormat.table, medium, None
    if (implied is not None and given is not implied) or medium == "arrays":
        means = f"the {implied.value} format" if implied is not None else "binary arrays"
        return given, medium, AttnError("options.contradicts_o_whose_extension_means",
                                        "--format", value=given.value, name=shorten(output.name), suffix=suffix,
                                        means=means)
    return given, medium, None


FileArg = Annotated[str, typer.Argument(help="The document (YAML or JSON), or - to read it from standard input.",
                                        metavar="FILE")]

Precision = Annotated[int, typer.Option("--precision", "-p", min=0, max=17,
                                        help="Decimals shown in tables (JSON always has full precision).")]

Debug = Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")]


def bad_value(id: str, **fields: object) -> typer.BadParameter:
    """An option's bad value, as the message ``id`` of the catalogue: English for Click, and written again in the
    run's language when it is printed (:func:`attncli.cli.main.main`: ``--lang`` may come after the option)."""
    from attncli.core.messages import text

    error = typer.BadParameter(text(id, fields, "en"))
    error.message_id, error.message_fields = id, fields
    return error


def output_path(text: str) -> Path:
    """An output file's name as given: one that names a folder (``results/``, ``.``) is refused before any work."""
    if text == "":
        raise bad_value("options.output_is_empty")
    if text.endswith(("/", os.sep)) or os.path.basename(text) in (".", ".."):
        slash = text.endswith(("/", os.sep))
        raise bad_value("options.output_ends_in_slash" if slash else "options.output_names_a_folder", name=repr(text))
    return Path(text)


ScaleOption = Annotated[Optional[str], typer.Option("--scale",
                                                    help="Replace the document's scale: sqrt, none or a number.")]
MaskOption = Annotated[Optional[str], typer.Option("--mask",
                                                   help="Replace the document's mask: none, causal or a matrix "
                                                        "file (relative to the working directory).")]
HeadsOption = Annotated[Optional[int], typer.Option("--heads", min=1, help="Replace the document's number of heads.")]
LayerOption = Annotated[Optional[int], typer.Option(
    "--layer", min=1, help="A stacked document's (layers:) layer, counting from 1: that layer alone, its inputs the "
                           "output of the layers before it.")]
LANG_HELP = ("Language: en or zh. Left out: ATTNCLI_LANG (en or zh), else zh under a Chinese locale (the first of "
             "LC_ALL, LC_MESSAGES, LANG that is set, zh_*), else en.")
LangOption = Annotated[Optional[Lang], typer.Option("--lang", case_sensitive=False, show_default=False,
                                                    help=LANG_HELP)]


def overrides(scale: Optional[str], mask: Optional[str], heads: Optional[int]) -> dict:
    """--scale, --mask and --heads as the document's keys they replace
    (a mask file named relative to the working directory).

    Each is checked here, before the document is read, as far as it can be alone (--scale abc, a --mask file missing).
    """
    from attncli.core.errors import AttnError, shorten
    from attncli.inputs.values import scale_of

    if scale is not None:
        try:
            scale_of(scale, 1)
        except AttnError as e:
            raise e.placed("--scale") from None

    if mask is not None and mask not in ("none", "causal"):  # (as in the document: Causal is a typo, named)
        if not os.path.lexists(mask):  # a name there is the reader's to check (a loop of links, a folder, a long name)
            import difflib

            close = difflib.get_close_matches(mask.lower()[:100], ("none", "causal"), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else " (no such file)"
            raise AttnError("options.not_none_causal_mask_file", "--mask", mask=shorten(mask), hint=hint)
        mask = os.path.abspath(mask)
    return {"scale": scale, "mask": mask, "heads": heads}


def head_choice(text: Optional[str]) -> Optional[int]:
    """--head: a head number (counting from 1), or None for ``all`` (or when it is left out)."""
    if text is None or text.strip().lower() == "all":
        return None
    number = whole_number(text)
    if number is None:
        from attncli.core.errors import AttnError, quoted

        raise AttnError("options.not_head_number_all", "--head", text=quoted(text))
    return number


ExportOption = Annotated[Optional[Path], typer.Option("--export", parser=output_path, metavar="FILE",
                                                      help="Also save what the terminal shows as a picture or page: "
                                                           "FILE.svg, FILE.png (needs attncli\\[png]), FILE.html or "
                                                           "FILE.txt (atomically). A picture too large to view "
                                                           "(a PNG over 32,767 pixels a side, a page over 10,000 "
                                                           "lines) is refused before it is drawn.")]


class Theme(str, Enum):
    dark = "dark"
    light = "light"


ThemeOption = Annotated[Optional[Theme], typer.Option("--theme",
                                                      help="The look of an --export picture: dark, a terminal window "
                                                           "(the default for .svg and .png), or light, black on white "
                                                           "with no frame, for slides and papers "
                                                           "(the default for .html).")]


def whole_number(text: str) -> int | None:
    """An option's text as a whole number (``3``, `` 3``, ``-1``), or None: ASCII digits only.

    str.isdigit() also accepts ``²`` and ``３``, which int() refuses or reads; a number of
    more than 18 digits is read as ±10^18 (out of every range, and int() refuses 4300 digits).
    """
    match = re.fullmatch(r"\s*([-+]?)([0-9]+)\s*", text, re.ASCII)
    if match is None:
        return None
    sign, digits = match.groups()
    number = int(digits) if len(digits) <= 18 else 10**18
    return -number if sign == "-" else number
