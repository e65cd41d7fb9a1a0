"""Every way a document or a matrix file can be wrong: one `Error: …` line, exit 2, nothing on stdout.

One table, one case per bad input.  Each case writes its files into a fresh folder,
runs ``attncli compute doc.yaml --format json`` and checks the exit code, that
standard output is empty, that there is no traceback, that the message is one
line, and the words it must contain (the file, the key, the row and column).
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from attncli.cli import app
from attncli.inputs import document

X = "inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n"  # n = 3, d_model = 4
W43 = "[[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]"  # 4 × 3
W42 = "[[1, 0], [0, 1], [0, 0], [1, 1]]"  # 4 × 2


@dataclass
class Case:
    id: str
    doc: str | bytes  # the document, written to doc.yaml (or `name`)
    names: list[str]  # what the message must contain
    files: dict[str, str | bytes | Callable[[Path], None]] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    name: str = "doc.yaml"
    env: dict[str, str] = field(default_factory=dict)  # environment variables for the run
    target: str | None = None  # the file to compute instead of the document (one of `files`)


def npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=array.dtype == object)
    return buffer.getvalue()


def forged_npy(path: Path) -> None:
    """A valid header claiming 100000 × 100000 float64, followed by 16 bytes of data."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + bytes(16))


def npy_with_header(header: str, data: bytes = bytes(16)) -> bytes:
    """A version 1.0 .npy file with this header text (padded as numpy pads it) and data."""
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def fifo(path: Path) -> None:
    os.mkfifo(path)


def device(path: Path) -> None:
    path.symlink_to("/dev/null")


def endless_device(path: Path) -> None:
    path.symlink_to("/dev/zero")


CASES = [
    # ---------------------------------------------------------------- the document
    Case("python-tag", X + "scale: !!python/object/apply:os.system ['touch pwned']\n",
         ["doc.yaml", "!!python/object/apply:os.system", "not allowed"]),
    Case("python-name-tag", X + "mask: !!python/name:os.system\n", ["doc.yaml", "line 2", "not allowed"]),
    Case("custom-tag", X + "scale: !custom 1\n", ["doc.yaml", "!custom", "not allowed"]),
    Case("alias", "row: &r [1, 2]\ninputs: [*r, *r]\n", ["doc.yaml", "line 2", "aliases (*r) are not allowed"]),
    Case("merge-key", X + "base: &b {query: " + W43 + "}\nweights:\n  <<: *b\n",
         ["doc.yaml", "line 4", "merge keys (<<) are not allowed"]),
    Case("merge-key-inline", X + "weights:\n  <<: {query: " + W43 + "}\n", ["doc.yaml", "line 3", "merge keys"]),
    Case("duplicate-key", X + "scale: none\nscale: sqrt\n", ["doc.yaml", "duplicate key 'scale'", "line 3"]),
    Case("duplicate-nested-key", X + "weights:\n  query: " + W43 + "\n  query: " + W43 + "\n",
         ["doc.yaml", "duplicate key 'query'", "line 4"]),
    Case("invalid-utf8", X.encode() + b"tokens: [a, \xff\xfe, c]\n", ["doc.yaml", "invalid UTF-8", "line 2"]),
    Case("binary-document", b"\x00\x01\x02garbage\x00", ["doc.yaml", "binary"]),
    Case("empty-document", "", ["doc.yaml", "empty"]),
    Case("only-comments", "# nothing here\n\n", ["doc.yaml", "empty"]),
    Case("explicit-null", "null\n", ["doc.yaml", "empty"]),
    Case("top-level-list", "- [1, 2]\n- [3, 4]\n", ["doc.yaml", "top level is a list", "mapping"]),
    Case("top-level-scalar", "hello\n", ["doc.yaml", "top level", "mapping"]),
    Case("several-documents", X + "---\n" + X, ["doc.yaml", "several YAML documents"]),
    Case("unknown-key", X + "wieghts: {}\n", ["doc.yaml", "unknown key 'wieghts'", "did you mean 'weights'"]),
    Case("unknown-weight-key", X + "weights: {qurey: " + W43 + "}\n",
         ["doc.yaml", "weights", "'qurey'", "did you mean 'query'"]),
    Case("unknown-bias-key", X + "bias: {valeu: [1, 2, 3, 4]}\n",
         ["doc.yaml", "bias", "'valeu'", "did you mean 'value'"]),
    Case("non-string-key", X + "1: 2\n", ["doc.yaml", "keys must be names", "line 2"]),
    Case("yaml-syntax", X + "weights: [1, 2\n", ["doc.yaml", "invalid YAML", "line"]),
    Case("yaml-tab-indent", "inputs:\n\t- [1, 2]\n", ["doc.yaml", "invalid YAML", "line 2"]),
    Case("weights-not-mapping", X + "weights: [1, 2]\n", ["doc.yaml", "weights", "mapping"]),
    Case("nested-brackets", "[" * 100000, ["doc.yaml", "line 1", "nested too deeply"]),
    Case("nested-block-lists", "inputs:\n" + "- " * 100000 + "1\n", ["doc.yaml", "line 2", "nested too deeply"]),
    Case("nested-brackets-key", "inputs: " + "[" * 100000 + "1" + "]" * 100000 + "\n",
         ["doc.yaml", "nested too deeply"]),
    Case("brackets-in-a-comment-then-a-syntax-error", "# " + "[" * 70 + "\ninputs: [[1, 2]\nscale: none\n",
         ["doc.yaml", "invalid YAML at line 3"]),
    Case("brackets-in-quotes-then-a-syntax-error",
         "tokens: ['" + "[" * 70 + "', \"" + "{" * 70 + "\"]\ninputs: [[1, 2]\nx: y\n",
         ["doc.yaml", "invalid YAML at line 3"]),
    Case("random-of-no-shape", "inputs: {file: false, random: null, shape: []}\nbias: {}\nmask: {}\nweights: {}\n",
         ["doc.yaml", "inputs"]),
    Case("random-of-an-empty-shape", "inputs: {random: normal, shape: []}\n", ["doc.yaml", "inputs"]),
    Case("json-syntax", '{"inputs": [[1, 2],]}', ["doc.json", "invalid JSON", "line 1, column"], name="doc.json"),
    Case("json-nan", '{"inputs": [[1, NaN]]}', ["doc.json", "NaN", "strict JSON"], name="doc.json"),
    Case("json-duplicate", '{"inputs": [[1]], "inputs": [[2]]}', ["doc.json", "duplicate key 'inputs'"],
         name="doc.json"),
    Case("json-nested", "[" * 100000, ["doc.json", "nested too deeply"], name="doc.json"),
    Case("json-lone-surrogate", '{"inputs": [[1, 0], [0, 1]], "tokens": ["\\ud83d", "b"]}',
         ["doc.json", "'\\ud83d'", "surrogate"], name="doc.json"),
    Case("json-lone-surrogate-in-path", '{"inputs": "x\\udc00.csv"}', ["doc.json", "surrogate"], name="doc.json"),
    Case("json-top-level-list", "[[1, 2]]", ["doc.json", "top level is a list"], name="doc.json"),
    Case("missing-inputs", "scale: none\n", ["doc.yaml", "inputs", "required"]),
    Case("document-device", X, ["zero.yaml", "not a regular file"], files={"zero.yaml": endless_device},
         target="zero.yaml"),
    Case("document-utf16", "\ufeffinputs: [[1]]\n".encode("utf-16-le"), ["doc.yaml", "binary"]),
    Case("bom-inside", X + "\ufeffscale: none\n", ["doc.yaml", "invalid YAML at line 2"]),
    # ---------------------------------------------------------------- numbers
    Case("yaml11-boolean-no", "inputs: [[1, 0], [no, 1]]\n",
         ["doc.yaml", "inputs", "row 2, column 1", "'no'", "not a number"]),
    Case("yaml11-boolean-on", "inputs: [[1, on]]\n", ["doc.yaml", "inputs", "row 1, column 2", "'on'"]),
    Case("boolean-in-matrix", "inputs: [[1, true]]\n",
         ["doc.yaml", "inputs", "row 1, column 2", "booleans belong only in a mask"]),
    Case("null-cell", "inputs: [[1, 2], [3, null]]\n", ["doc.yaml", "inputs", "row 2, column 2", "null"]),
    Case("trailing-comma", "inputs: [[1, ], [3, 4]]\n",
         ["doc.yaml", "inputs", "row 2 has 2 entries but the first has 1 (ragged rows)"]),
    Case("date-cell", "inputs: [[1, 2024-01-01]]\n",
         ["doc.yaml", "inputs", "row 1, column 2", "'2024-01-01'", "not a number"]),
    Case("string-cell", "inputs: [[1, 2], [three, 4]]\n", ["doc.yaml", "inputs", "row 2, column 1", "'three'"]),
    Case("nan-cell", "inputs: [[1, .nan]]\n", ["doc.yaml", "inputs", "row 1, column 2", "nan is not a finite number"]),
    Case("inf-cell", "inputs: [[-.inf, 1]]\n", ["doc.yaml", "inputs", "row 1, column 1", "inf is not a finite number"]),
    Case("float-overflow", "inputs: [[1, 1e999]]\n", ["doc.yaml", "inputs", "row 1, column 2", "1e999 is too large"]),
    Case("huge-integer", "inputs: [[1, 1" + "0" * 400 + "]]\n",
         ["doc.yaml", "inputs", "row 1, column 2", "too large for float64"]),
    Case("json-huge-integer", '{"inputs": [[1, 1' + "0" * 400 + "]]}",
         ["doc.json", "inputs", "row 1, column 2", "too large"], name="doc.json"),
    Case("ragged-rows", "inputs: [[1, 2, 3], [4, 5]]\n",
         ["doc.yaml", "inputs", "row 2 has 2 entries but the first has 3"]),
    Case("empty-matrix", "inputs: []\n", ["doc.yaml", "inputs", "empty"]),
    Case("zero-width-matrix", "inputs: [[], []]\n", ["doc.yaml", "inputs", "empty row"]),
    Case("vector-for-matrix", "inputs: [1, 2, 3]\n", ["doc.yaml", "inputs", "vector", "expected a matrix"]),
    Case("scalar-for-matrix", "inputs: 7\n", ["doc.yaml", "inputs", "expected a matrix", "not 7"]),
    Case("four-axes", "inputs: [[[[1]]]]\n", ["doc.yaml", "inputs", "at most 3 axes"]),
    Case("row-not-list", "inputs: [[1, 2], 3]\n", ["doc.yaml", "inputs", "row 2", "where a list belongs"]),
    Case("weight-cell", X + "weights: {query: [[1, 0, 1], [1, 0, 0], [0, x, 1], [0, 1, 1]]}\n",
         ["doc.yaml", "weights.query", "row 3, column 2", "'x'"]),
    Case("bias-cell", X + "bias: {query: [1, 2, nope, 4]}\n", ["doc.yaml", "bias.query", "entry 3", "'nope'"]),
    Case("3d-cell", X + "weights: {query: [[[1], [0], [1], [0]], [[1], [0], [true], [0]]]}\n",
         ["doc.yaml", "weights.query", "head 2, row 3, column 1"]),
    Case("scale-word", X + "scale: huge\n", ["doc.yaml", "scale", "'huge' is not sqrt, none or a number"]),
    Case("scale-nan", X + "scale: .nan\n", ["doc.yaml", "scale", "finite"]),
    Case("yaml11-boolean-yes-mask", X + "mask: [[1, 0, 0], [1, yes, 0], [1, 1, 1]]\n",
         ["doc.yaml", "mask", "row 2, column 2", "'yes'", "not a mask value"]),
    Case("yaml11-boolean-off-bias", X + "bias: {query: [1, off, 0, 0]}\n",
         ["doc.yaml", "bias.query", "entry 2", "'off'"]),
    Case("nan-in-mask", X + "mask: [[1, 0, 0], [1, 1, 0], [.nan, 1, 1]]\n",
         ["doc.yaml", "mask", "row 3, column 1", "not a mask value"]),
    Case("null-in-mask", X + "mask: [[1, 0, 0], [1, 1, ~], [1, 1, 1]]\n",
         ["doc.yaml", "mask", "row 2, column 3", "null", "not a mask value"]),
    Case("datetime-cell", "inputs: [[2024-01-01 10:00:00, 1]]\n",
         ["doc.yaml", "inputs", "row 1, column 1", "'2024-01-01 10:00:00'", "not a number"]),
    Case("yaml-float-tag-word", X + "scale: !!float sqrt\n", ["doc.yaml", "line 2", "'sqrt' is not a valid !!float"]),
    Case("huge-negative-integer", "inputs: [[1], [-" + "9" * 400 + "]]\n",
         ["doc.yaml", "inputs", "row 2, column 1", "too large for float64"]),
    Case("heads-zero", X + "heads: 0\n", ["doc.yaml", "heads", "whole number ≥ 1"]),
    Case("heads-string", X + "heads: two\n", ["doc.yaml", "heads", "'two'"]),
    Case("heads-float", X + "heads: 1.5\n", ["doc.yaml", "heads", "1.5"]),
    # ---------------------------------------------------------------- shapes
    Case("query-vs-inputs", X + "weights: {query: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}\n",
         ["doc.yaml", "weights.query: is 3×3 but inputs have 4 columns (need 4×d_k)"]),
    Case("key-width", X + "weights: {query: " + W43 + ", key: [[1, 0], [0, 1], [1, 1], [0, 0]]}\n",
         ["doc.yaml", "weights.key", "width 2", "width 3", "same d_k"]),
    Case("key-vs-inputs", X + "weights: {key: [[1, 0, 0, 0], [0, 1, 0, 0]]}\n",
         ["doc.yaml", "weights.key: is 2×4 but inputs have 4 columns (need 4×d_k)"]),
    Case("value-vs-context", X + "context: [[1, 2], [3, 4]]\nweights: {query: " + W42 + ", value: " + W43 + "}\n",
         ["doc.yaml", "weights.value: is 4×3 but context has 2 columns (need 2×d_v)"]),
    Case("key-vs-context", X + "context: [[1, 2, 3], [3, 4, 5]]\nweights: {query: " + W42
         + ", key: [[1, 0], [0, 1]]}\n", ["doc.yaml", "weights.key: is 2×2 but context has 3 columns (need 3×d_k)"]),
    Case("context-width-identity", X + "context: [[1, 2], [3, 4]]\n",
         ["context: has rows of 2 numbers but inputs have 4", "give weights.query and weights.key"]),
    Case("context-vector", X + "context: [1, 2, 3, 4]\n", ["doc.yaml", "context", "vector"]),
    Case("heads-do-not-divide", X + "heads: 2\nweights: {query: " + W43 + "}\n",
         ["doc.yaml", "weights.query", "3 columns", "2 heads cannot split"]),
    Case("heads-identity-do-not-divide", X + "heads: 3\n",
         ["doc.yaml", "weights.query", "omitted", "4×4 identity", "3 heads cannot split"]),
    Case("heads-vs-3d", X + "heads: 3\nweights: {query: [[[1], [0], [1], [0]], [[1], [0], [1], [0]]]}\n",
         ["doc.yaml", "weights.query", "2 heads but heads is 3"]),
    Case("3d-weights-disagree", X + "weights:\n  query: [[[1], [0], [1], [0]], [[1], [0], [1], [0]]]\n"
         "  key: [[[1], [0], [1], [0]], [[1], [0], [1], [0]], [[1], [0], [1], [0]]]\n",
         ["doc.yaml", "weights", "disagree", "weights.query has 2", "weights.key has 3"]),
    Case("weight-vector", X + "weights: {query: [1, 2, 3, 4]}\n", ["doc.yaml", "weights.query", "vector"]),
    Case("bias-length", X + "weights: {query: " + W43 + ", key: " + W43 + "}\nbias: {query: [1, 2]}\n",
         ["doc.yaml", "bias.query", "length 2", "need 3"]),
    Case("bias-matrix", X + "bias: {key: [[1, 2], [3, 4]]}\n", ["doc.yaml", "bias.key", "2×2", "vector of length 4"]),
    Case("bias-value-length", X + "heads: 2\nbias: {value: [1, 2, 3]}\n",
         ["doc.yaml", "bias.value", "length 3", "weights.value gives 4 columns", "need 4"]),
    Case("bias-key-length-3d", X + "weights: {key: [[[1], [0], [1], [0]], [[1], [0], [1], [0]]], "
         "query: [[[1], [0], [1], [0]], [[1], [0], [1], [0]]]}\nbias: {key: [1]}\n",
         ["doc.yaml", "bias.key", "length 1", "need 2"]),
    Case("bias-output-without-wo", X + "bias: {output: [1, 2]}\n",
         ["doc.yaml", "bias.output", "length 2", "the concatenated heads give 4 columns"]),
    Case("bias-output-length", X + "weights: {output: [[1, 0], [0, 1], [1, 1], [0, 0]]}\nbias: {output: [1, 2, 3]}\n",
         ["doc.yaml", "bias.output", "length 3", "need 2"]),
    Case("output-height", X + "weights: {value: " + W43 + ", output: [[1, 0], [0, 1]]}\n",
         ["doc.yaml", "weights.output: is 2×2", "3 columns", "need 3×d_out"]),
    Case("mask-shape", X + "mask: [[1, 0], [1, 1]]\n", ["doc.yaml", "mask: is 2×2 but needs 3×3"]),
    Case("mask-value", X + "mask: [[1, 0, 0], [1, 2, 0], [1, 1, 1]]\n",
         ["doc.yaml", "mask", "row 2, column 2", "not a mask value"]),
    Case("mask-word", X + "mask: upper\n",
         ["doc.yaml", "mask", "'upper' is not none, causal, a matrix or a matrix file"]),
    Case("mask-typo", X + "mask: Causal\n", ["doc.yaml", "mask", "did you mean 'causal'"]),
    Case("mask-random", X + "mask: {random: uniform}\n", ["doc.yaml", "mask", "cannot be random"]),
    Case("mask-two-in-npy", X + "mask: m.npy\n", ["m.npy", "row 1, column 2", "2 is not a mask value"],
         files={"m.npy": npy_bytes(np.array([[1, 2, 0], [1, 1, 0], [1, 1, 1]]))}),
    Case("mask-fraction-in-csv", X + "mask: m.csv\n", ["m.csv", "line 3, column 1", "0.5 is not a mask value"],
         files={"m.csv": "1,0,0\n1,1,0\n0.5,1,1\n"}),
    Case("token-count", X + "tokens: [a, b]\n", ["doc.yaml", "tokens", "2 labels but inputs have 3 rows"]),
    Case("token-string-count", X + "tokens: 我想吃鱼\n", ["doc.yaml", "tokens", "4 labels but inputs have 3 rows"]),
    Case("context-token-count", X + "context: [[1, 0, 1, 0]]\ncontext_tokens: [a, b]\n",
         ["doc.yaml", "context_tokens", "2 labels", "1 row"]),
    Case("context-tokens-without-context", X + "context_tokens: [a, b, c]\n",
         ["doc.yaml", "context_tokens", "no context"]),
    Case("token-label-list", X + "tokens: [a, [b], c]\n", ["doc.yaml", "tokens", "label 2"]),
    # ---------------------------------------------------------------- matrix files
    Case("file-missing", "inputs: nowhere.csv\n", ["doc.yaml", "inputs", "nowhere.csv", "no such file"]),
    Case("file-directory", "inputs: folder.csv\n", ["doc.yaml", "inputs", "folder.csv", "directory"],
         files={"folder.csv": lambda p: p.mkdir()}),
    Case("file-device", "inputs: dev.csv\n", ["doc.yaml", "inputs", "dev.csv", "not a regular file"],
         files={"dev.csv": device}),
    Case("file-fifo", "inputs: pipe.txt\n", ["doc.yaml", "inputs", "pipe.txt", "not a regular file"],
         files={"pipe.txt": fifo}),
    Case("file-empty", "inputs: x.csv\n", ["doc.yaml", "inputs", "x.csv", "empty"], files={"x.csv": ""}),
    Case("file-blank-lines", "inputs: x.csv\n", ["doc.yaml", "inputs", "x.csv", "empty"], files={"x.csv": "\n\n  \n"}),
    Case("file-ragged", "inputs: x.csv\n", ["x.csv", "line 2 has 2 numbers but line 1 has 3"],
         files={"x.csv": "1,2,3\n4,5\n"}),
    Case("file-text-cell", "inputs: x.csv\n", ["x.csv", "line 2, column 3", "'abc' is not a number"],
         files={"x.csv": "1,2,3\n4,5,abc\n"}),
    Case("file-empty-cell", "inputs: x.csv\n", ["x.csv", "line 1, column 2", "empty cell"], files={"x.csv": "1,,3\n"}),
    Case("file-header", "inputs: x.csv\n", ["x.csv", "line 1, column 1", "header"], files={"x.csv": "a,b,c\n1,2,3\n"}),
    Case("file-wrong-delimiter", "inputs: x.csv\n", ["x.csv", "line 1, column 1", "commas"],
         files={"x.csv": "1;2;3\n4;5;6\n"}),
    Case("file-tabs-in-csv", "inputs: x.csv\n", ["x.csv", "line 1, column 1", "commas"], files={"x.csv": "1\t2\t3\n"}),
    Case("file-commas-in-tsv", "inputs: x.tsv\n", ["x.tsv", "line 1, column 1", "tabs"], files={"x.tsv": "1,2\n3,4\n"}),
    Case("file-binary", "inputs: x.csv\n", ["x.csv", "binary"], files={"x.csv": bytes(range(256)) * 4}),
    Case("file-invalid-utf8", "inputs: x.txt\n", ["x.txt", "invalid UTF-8", "line 2"],
         files={"x.txt": b"1 2\n3 \xff\n"}),
    Case("file-nan", "inputs: x.txt\n", ["x.txt", "line 2, column 1", "not a finite number"],
         files={"x.txt": "1 2\nnan 4\n"}),
    Case("file-overflow", "inputs: x.txt\n", ["x.txt", "line 1, column 2", "1e999 is too large for float64"],
         files={"x.txt": "1 1e999\n"}),
    Case("file-infinity", "inputs: x.csv\n", ["x.csv", "line 1, column 1", "-Infinity is not a finite number"],
         files={"x.csv": "-Infinity,1\n"}),
    Case("file-bom-only", "inputs: x.csv\n", ["x.csv", "empty"], files={"x.csv": b"\xef\xbb\xbf\n"}),
    Case("file-commas-in-txt", "inputs: x.txt\n", ["x.txt", "line 1, column 1", "white space"],
         files={"x.txt": "1,2\n3,4\n"}),
    Case("file-spaces-in-tsv", "inputs: x.tsv\n", ["x.tsv", "line 1, column 1", "'1 2' is not a number", "tabs"],
         files={"x.tsv": "1 2\n3 4\n"}),
    Case("file-header-after-bom", "inputs: x.csv\n", ["x.csv", "line 1, column 1", "'a'", "header"],
         files={"x.csv": b"\xef\xbb\xbfa,b\n1,2\n"}),
    Case("file-utf16", "inputs: x.csv\n", ["x.csv", "binary"], files={"x.csv": "1,2\n3,4\n".encode("utf-16")}),
    Case("file-huge-integer", "inputs: x.csv\n", ["x.csv", "line 2, column 2", "too large for float64"],
         files={"x.csv": "1,2\n3,1" + "0" * 400 + "\n"}),
    Case("file-true-in-csv", "inputs: x.csv\n", ["x.csv", "line 1, column 2", "'true' is not a number"],
         files={"x.csv": "1,true\n"}),
    Case("file-underscore-number", "inputs: x.csv\n", ["x.csv", "line 1, column 1", "'1_0' is not a number"],
         files={"x.csv": "1_0,2\n3,4\n"}),
    Case("file-form-feed-is-not-a-line-break", "inputs: x.csv\n", ["x.csv", "line 1, column 2", "not a number"],
         files={"x.csv": "1,2\f3,4\n"}),
    Case("mask-file-word", X + "mask: m.csv\n", ["m.csv", "line 1, column 1", "'yes' is not a mask value"],
         files={"m.csv": "yes,0,0\n1,1,0\n1,1,1\n"}),
    Case("file-kind", "inputs: x.xlsx\n", ["doc.yaml", "inputs", "x.xlsx", ".csv", ".npy"]),
    Case("file-mask-value", X + "mask: m.csv\n", ["m.csv", "line 2, column 3", "not a mask value"],
         files={"m.csv": "1,0,0\n1,1,5\n1,1,1\n"}),
    Case("npy-pickle", "inputs: x.npy\n", ["x.npy", "pickles are refused"],
         files={"x.npy": npy_bytes(np.array([[1, "a"]], dtype=object))}),
    Case("npy-bad-magic", "inputs: x.npy\n", ["x.npy", "not a readable .npy file", "signature"],
         files={"x.npy": b"\x89PNG\r\n\x1a\n" + bytes(64)}),
    Case("npy-is-npz", "inputs: x.npy\n", ["x.npy", ".npz archive"],
         files={"x.npy": b"PK\x03\x04 this is a zip, not npy" * 4}),
    Case("npy-object-header", "inputs: x.npy\n", ["x.npy", "pickles are refused"],
         files={"x.npy": lambda p: p.write_bytes(npy_bytes(np.array([None, 1], dtype=object))[:140])}),
    Case("npy-empty-file", "inputs: x.npy\n", ["x.npy", "not a readable .npy file"], files={"x.npy": b""}),
    Case("npy-forged-shape", "inputs: x.npy\n", ["x.npy", "not a readable .npy file", "100000"],
         files={"x.npy": forged_npy}),
    Case("npy-truncated-header", "inputs: x.npy\n", ["x.npy", "not a readable .npy file"],
         files={"x.npy": b"\x93NUMPY\x01\x00\xff\xff{'descr'"}),
    Case("npy-device", "inputs: x.npy\n", ["x.npy", "not a regular file"], files={"x.npy": endless_device}),
    Case("npy-directory", "inputs: x.npy\n", ["x.npy", "directory"], files={"x.npy": lambda p: p.mkdir()}),
    Case("npy-huge-header-length", "inputs: x.npy\n", ["x.npy", "header cannot be read"],
         files={"x.npy": b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f8'"}),
    Case("npy-v2-huge-header-length", "inputs: x.npy\n", ["x.npy", "header cannot be read"],
         files={"x.npy": b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{'descr'"}),
    Case("npy-version-3", "inputs: x.npy\n", ["x.npy", "version 3.0", "1.0 and 2.0"],
         files={"x.npy": b"\x93NUMPY\x03\x00" + bytes(32)}),
    Case("npy-code-in-header", "inputs: x.npy\n", ["x.npy", "header cannot be read"],
         files={"x.npy": npy_with_header("{'descr': __import__('os').system('touch pwned'), "
                                         "'fortran_order': False, 'shape': (1, 2), }")}),
    # found by the fuzz test: numpy's header check accepts a boolean or negative length
    Case("npy-boolean-shape", "inputs: x.npy\n", ["x.npy", "not a readable .npy file", "shape (True, 2)"],
         files={"x.npy": npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (True, 2), }")}),
    Case("npy-negative-shape", "inputs: x.npy\n", ["x.npy", "not a readable .npy file", "shape (-1, 4)"],
         files={"x.npy": npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (-1, 4), }", bytes(40))}),
    Case("npy-fortran-truncated", "inputs: x.npy\n", ["x.npy", "promises 3×4 float64 (96 bytes)", "40 bytes"],
         files={"x.npy": npy_with_header("{'descr': '<f8', 'fortran_order': True, 'shape': (3, 4), }", bytes(40))}),
    Case("npy-bool-for-inputs", "inputs: x.npy\n", ["x.npy", "bool", "only in a mask"],
         files={"x.npy": npy_bytes(np.array([[True, False], [False, True]]))}),
    Case("npy-datetime", "inputs: x.npy\n", ["x.npy", "datetime64", "real numbers"],
         files={"x.npy": npy_bytes(np.zeros((2, 2), dtype="datetime64[s]"))}),
    Case("npy-structured", "inputs: x.npy\n", ["x.npy", "real numbers"],
         files={"x.npy": npy_bytes(np.zeros((2, 2), dtype=[("a", "<f8")]))}),
    Case("npy-bytes", "inputs: x.npy\n", ["x.npy", "|S1", "real numbers"],
         files={"x.npy": npy_bytes(np.array([[b"a", b"b"]]))}),
    Case("npy-inf", "inputs: x.npy\n", ["x.npy", "row 1, column 2", "inf is not a finite number"],
         files={"x.npy": npy_bytes(np.array([[1.0, np.inf]]))}),
    Case("npy-longdouble-overflow", "inputs: x.npy\n", ["x.npy", "row 1, column 1", "not a finite number"],
         files={"x.npy": npy_bytes(np.array([[np.longdouble("1e400")]]))}),
    Case("npy-complex", "inputs: x.npy\n", ["x.npy", "complex128", "real numbers"],
         files={"x.npy": npy_bytes(np.ones((2, 2), dtype=complex))}),
    Case("npy-strings", "inputs: x.npy\n", ["x.npy", "<U1", "real numbers"],
         files={"x.npy": npy_bytes(np.array([["a", "b"]]))}),
    Case("npy-nan", "inputs: x.npy\n", ["x.npy", "row 2, column 1", "not a finite number"],
         files={"x.npy": npy_bytes(np.array([[1.0, 2.0], [np.nan, 1.0]]))}),
    Case("npy-four-axes", "inputs: x.npy\n", ["x.npy", "1×1×1×1", "1 to 3 axes"],
         files={"x.npy": npy_bytes(np.ones((1, 1, 1, 1)))}),
    Case("npy-empty-array", "inputs: x.npy\n", ["x.npy", "not empty"], files={"x.npy": npy_bytes(np.ones((0, 3)))}),
    Case("npy-vector-for-inputs", "inputs: x.npy\n", ["doc.yaml", "inputs", "vector"],
         files={"x.npy": npy_bytes(np.ones(3))}),
    Case("only-no-matrix-in-tables", X, ["--only", "names no matrix", "tokens"],
         args=["--only", "tokens", "--format", "table"]),
    Case("only-no-matrix-in-npz", X, ["--only", "names no matrix"], args=["--only", "heads", "-o", "{dir}/out.npz"]),
    # ---------------------------------------------------------------- random initialisers
    Case("random-negative-std", X + "weights: {query: {random: normal, std: -1, shape: [4, 4]}}\n",
         ["doc.yaml", "weights.query", "std: -1 is negative"]),
    Case("random-negative-gain", X + "weights: {key: {random: xavier, gain: -1}}\n",
         ["doc.yaml", "weights.key", "gain: -1"]),
    Case("random-low-above-high", X + "weights: {value: {random: uniform, low: 2, high: 1}}\n",
         ["doc.yaml", "weights.value", "low: 2 is above high: 1"]),
    Case("random-range-too-wide", X + "weights: {value: {random: uniform, low: -1e308, high: 1e308}}\n",
         ["doc.yaml", "weights.value", "beyond float64"]),
    Case("random-huge-gain", X + "weights: {query: {random: xavier, gain: 1.5e308}}\n",
         ["doc.yaml", "weights.query", "beyond float64"]),
    Case("random-infinite-normal", "inputs: {random: normal, mean: 1.7e308, std: 1e308, shape: [2, 2]}\n",
         ["doc.yaml", "inputs", "beyond float64"]),
    # found by the fuzz test: an omitted weight is a d_model × d_model identity, which can be enormous
    Case("identity-too-large", "inputs: [[" + ", ".join(["1"] * 3000) + "]]\n",
         ["doc.yaml", "weights.query", "3000×3000 identity", "68.7 MiB", "1 MiB", "ATTNCLI_MEMORY"],
         env={"ATTNCLI_MEMORY": "1M"}),
    Case("random-huge-shape", X + "weights: {query: {random: normal, shape: [4, 100000000000]}}\n",
         ["doc.yaml", "weights.query", "shape", "GiB"]),
    Case("random-big-product", X + "weights: {query: {random: normal, shape: [100000, 100000]}}\n",
         ["doc.yaml", "weights.query", "100000×100000", "74.5 GiB"]),
    Case("random-kind", X + "weights: {query: {random: gaussian}}\n",
         ["doc.yaml", "weights.query", "'gaussian'", "xavier"]),
    Case("random-unknown-key", X + "weights: {query: {random: normal, sede: 1}}\n",
         ["doc.yaml", "weights.query", "'sede'", "did you mean 'seed'"]),
    Case("random-seed", X + "weights: {query: {random: normal, seed: -1}}\n",
         ["doc.yaml", "weights.query", "seed", "≥ 0"]),
    Case("random-shape-zero", X + "weights: {query: {random: normal, shape: [4, 0]}}\n",
         ["doc.yaml", "weights.query", "shape", "positive"]),
    Case("random-no-shape", "inputs: {random: normal}\n", ["doc.yaml", "inputs", "give a shape"]),
    Case("random-std", X + "weights: {query: {random: normal, std: .inf}}\n",
         ["doc.yaml", "weights.query", "std", "finite"]),
    # ---------------------------------------------------------------- numerical trouble
    Case("scores-overflow", "tokens: [a, b]\ninputs: [[1e200, 1e200], [1, 1]]\n",
         ["doc.yaml", "overflow float64", "row 1 ('a')"]),
    Case("scaled-scores-overflow", "tokens: [a, b]\ninputs: [[1, 1], [1e150, 1e150]]\nscale: 1e300\n",
         ["doc.yaml", "scaled scores overflow float64", "row 1 ('a')"]),
    Case("output-overflow", "tokens: [a, b]\ninputs: [[2, 0], [0, 2]]\nweights: {output: [[1.5e308], [1.5e308]]}\n",
         ["doc.yaml", "output overflow float64", "row 1 ('a')"]),
    Case("overflow-second-head", "tokens: [a, b]\ninputs: [[1, 0, 1e200, 1e200], [1, 1, 1, 1]]\nheads: 2\n",
         ["doc.yaml", "scores overflow float64 at head 2, row 1 ('a')"]),
    Case("queries-overflow", "inputs: [[1e308, 1e308], [1, 1]]\nweights: {query: [[10, 0], [0, 10]]}\n",
         ["doc.yaml", "overflow float64", "row 1 ('x1')"]),
    # ---------------------------------------------------------------- output files and options
    Case("output-is-document", X, ["doc.yaml", "input files"], args=["-o", "{dir}/doc.yaml"]),
    Case("output-is-matrix-file", "inputs: x.tsv\n", ["x.tsv", "input files"], files={"x.tsv": "1\t2\n3\t4\n"},
         args=["-o", "{dir}/x.tsv"]),  # (an extension that names no format: -o x.csv would contradict --format json)
    Case("output-folder-missing", X, ["no/such/folder", "does not exist"], args=["-o", "{dir}/no/such/folder/o.json"]),
    Case("output-is-directory", X, ["directory"], args=["-o", "{dir}"]),
    Case("option-head-range", X, ["--head 2 is out of range"], args=["--format", "table", "--head", "2"]),
    Case("option-only", X, ["--only", "'wieghts'", "did you mean 'weights'"], args=["--only", "wieghts"]),
    Case("option-mask-file-missing", X, ["--mask", "'nope.csv'", "no such file"], args=["--mask", "nope.csv"]),
    Case("option-mask-typo", X, ["--mask", "'Causal'", "did you mean 'causal'"], args=["--mask", "Causal"]),
    Case("option-mask-file-shape", X, ["--mask", "2×2 but needs 3×3"], args=["--mask", "m.csv"],
         files={"m.csv": "1,0\n1,1\n"}),
    Case("option-scale-word", X, ["--scale", "'abc' is not sqrt, none or a number"], args=["--scale", "abc"]),
]


def write_case(case: Case, folder: Path) -> Path:
    for name, content in case.files.items():
        path = folder / name
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    doc = folder / case.name
    doc.write_bytes(case.doc if isinstance(case.doc, bytes) else case.doc.encode("utf-8"))
    return doc


def assert_one_clean_error(result, names: list[str]) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stdout == ""
    message = result.stderr
    assert "Traceback" not in message
    assert message.startswith("Error: ") and message.endswith("\n") and message.count("\n") == 1, message
    for name in names:
        assert name in message, (name, message)
    return message


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(runner, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    doc = write_case(case, tmp_path)
    if case.target:
        doc = tmp_path / case.target
    args = [a.replace("{dir}", str(tmp_path)) for a in case.args]
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_symlink()}
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    result = runner.invoke(app, ["compute", str(doc), "--format", "json", *args])
    message = assert_one_clean_error(result, case.names)
    if case.id.startswith(("option-mask", "option-scale")):  # the option is at fault, not the document
        assert "doc.yaml" not in message and str(tmp_path) not in message, message
    # nothing written, nothing changed, nothing executed
    after = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_symlink()}
    assert after == before
    assert not (tmp_path / "pwned").exists()


def test_at_least_forty_cases():
    assert len(CASES) >= 40 and len({case.id for case in CASES}) == len(CASES)


# ---------------------------------------------------------------- beyond the table


def test_size_cap(runner, tmp_path, monkeypatch):
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", 1000)
    doc = tmp_path / "big.yaml"
    doc.write_text(X + "# " + "x" * 2000 + "\n")
    message = assert_one_clean_error(runner.invoke(app, ["compute", str(doc)]), ["big.yaml", "larger than", "npy"])
    assert "1000 bytes" in message or "KiB" in message or "MiB" in message


def test_size_cap_standard_input(runner, monkeypatch):
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", 1000)
    result = runner.invoke(app, ["compute", "-"], input=X + "#" * 5000)
    assert_one_clean_error(result, ["<stdin>", "larger than"])


def test_billion_laughs_is_answered_at_once(runner, tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append("inputs: *a9")
    doc = tmp_path / "laughs.yaml"
    doc.write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    result = runner.invoke(app, ["compute", str(doc)])
    assert time.perf_counter() - start < 5  # expanding it would take hours and gigabytes
    assert_one_clean_error(result, ["laughs.yaml", "aliases"])


def test_one_e_minus_three_is_a_number(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1e-3, 2E+2], [-1.5e1, .5]]\nscale: none\n")
    result = runner.invoke(app, ["compute", str(doc), "--format", "json", "--only", "inputs"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["inputs"] == [[0.001, 200.0], [-15.0, 0.5]]


def test_byte_order_mark_is_stripped(runner, tmp_path):
    (tmp_path / "x.csv").write_bytes(b"\xef\xbb\xbf1,2\n3,4\n")
    doc = tmp_path / "doc.yaml"
    doc.write_bytes(b"\xef\xbb\xbfinputs: x.csv\n")
    result = runner.invoke(app, ["compute", str(doc), "--format", "json", "--only", "inputs"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["inputs"] == [[1.0, 2.0], [3.0, 4.0]]


def test_mask_accepts_true_and_false(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1, 0], [0, 1]]\nmask: [[true, false], [1, 0]]\n")
    result = runner.invoke(app, ["compute", str(doc), "--format", "json", "--only", "weights"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["weights"] == [[[1.0, 0.0], [1.0, 0.0]]]


def test_internal_error_is_one_line_with_exit_70(runner, tmp_path, monkeypatch):
    import attncli.core.pipeline

    def broken(spec):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(attncli.core.pipeline, "attend", broken)
    doc = tmp_path / "doc.yaml"
    doc.write_text(X)
    result = runner.invoke(app, ["compute", str(doc)])
    assert result.exit_code == 70 and result.stdout == ""
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert "ZeroDivisionError: a bug" in result.stderr and "--debug" in result.stderr
    result = runner.invoke(app, ["compute", str(doc), "--debug"])
    assert result.exit_code == 70 and "Traceback" in result.stderr and "ZeroDivisionError" in result.stderr


def test_interrupt_exits_130(runner, tmp_path, monkeypatch):
    import attncli.core.pipeline

    def interrupted(spec):
        raise KeyboardInterrupt

    monkeypatch.setattr(attncli.core.pipeline, "attend", interrupted)
    doc = tmp_path / "doc.yaml"
    doc.write_text(X)
    result = runner.invoke(app, ["compute", str(doc)])
    assert result.exit_code == 130 and result.stdout == "" and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [["--heads", "0"], ["--precision", "many"], ["--format", "xml"], ["--bogus"]])
def test_usage_errors_exit_2(runner, tmp_path, args):
    doc = tmp_path / "doc.yaml"
    doc.write_text(X)
    result = runner.invoke(app, ["compute", str(doc), *args])
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.stderr


def test_failed_run_keeps_existing_output(runner, tmp_path):
    out = tmp_path / "out.json"
    out.write_text("precious")
    doc = tmp_path / "doc.yaml"
    doc.write_text(X + "mask: [[1, 0], [1, 1]]\n")
    assert_one_clean_error(runner.invoke(app, ["compute", str(doc), "-o", str(out)]), ["mask"])
    assert out.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.yaml", "out.json"]
