# ruff: noqa: E501  (a data file: one bad spec per line, kept whole)
"""Writes tests/adversarial/specs/: bad specs that must be refused (exit 2, located).

Run from the repository root: python tests/adversarial/make_corpus.py tests/adversarial/specs
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(sys.argv[1])
RUN = "command: touch EXECUTED\n"
HEAD = "reprospec: 1\nname: {name}\n"
EXPECT = "expect: {outcome: pass}\n"


def spec(name: str, about: str, body: str, *, command: bool = True, expect: bool = True) -> None:
    text = (
        f"# {about}\n" + HEAD.format(name=name.replace("_", "-")) + (RUN if command else "") + body
    )
    if expect:
        text += EXPECT
    (OUT / f"{name}.yaml").write_text(text, encoding="utf-8")


def raw(name: str, data: bytes) -> None:
    (OUT / f"{name}.yaml").write_bytes(data)


ten = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
# ---- bounded inputs
spec(
    "cells_1e9",
    "nine lines, 10^9 cells: counted, never expanded",
    "matrix:\n" + "".join(f"  a{i}: {ten}\n" for i in range(9)),
)
spec(
    "cells_1e6_with_exclude",
    "10^6 cells; exclude trims too little",
    "matrix:\n"
    + "".join(f"  a{i}: {ten}\n" for i in range(6))
    + "  exclude:\n    - {a0: 0}\n    - {a1: 1, a2: 2}\n",
)
spec(
    "cells_just_over",
    "101 x 100 x 10 = 101000 cells, just past the bound (an axis holds at most 256 values)",
    f"matrix:\n  a: {list(range(101))}\n  b: {list(range(100))}\n  c: {ten}\n",
)
spec(
    "cells_over_by_include",
    "100 x 100 x 10 cells (the bound) plus include entries that fit none",
    f"matrix:\n  a: {list(range(100))}\n  b: {list(range(100))}\n  c: {ten}\n  include:\n    - {{a: 500}}\n    - {{a: 501}}\n",
)
spec(
    "too_many_axes",
    "65 axes of one value each",
    "matrix:\n" + "".join(f"  a{i}: [x]\n" for i in range(65)),
)
spec(
    "too_many_include_entries",
    "257 include entries",
    "matrix:\n  include:\n" + "".join(f"    - {{n: {i}}}\n" for i in range(257)),
)
spec(
    "too_many_exclude_entries",
    "257 exclude entries",
    f"matrix:\n  a: {list(range(300))}\n  exclude:\n"
    + "".join(f"    - {{a: {i}}}\n" for i in range(257)),
)
spec(
    "exclude_interplay",
    "40 exclude entries that interact over 41 axes: too many ways to count",
    "matrix:\n"
    + "".join(f"  a{i}: [0, 1]\n" for i in range(40))
    + "  z: [0, 1]\n  exclude:\n"
    + "".join(f"    - {{a{i}: 0, z: 0}}\n" for i in range(40)),
)
spec("repeat_1e25", "repeat: 1e25 (a float in YAML 1.2)", "run: {repeat: 1e25}\n")
spec(
    "repeat_huge_int", "repeat: 10^25 as an integer", "run: {repeat: 10000000000000000000000000}\n"
)
spec("repeat_just_over", "repeat one past the bound", "run: {repeat: 10001}\n")
spec(
    "max_repeat_huge",
    "repeat: auto with max_repeat 10^12",
    "run: {repeat: auto, max_repeat: 1000000000000}\n",
)
spec(
    "attempts_over",
    "1000 cells x 101 attempts",
    f"matrix:\n  a: {ten}\n  b: {ten}\n  c: {ten}\nrun: {{repeat: 101}}\n",
)
spec(
    "auto_attempts_over",
    "1000 cells x max_repeat 101 (repeat: auto)",
    f"matrix:\n  a: {ten}\n  b: {ten}\n  c: {ten}\nrun: {{repeat: auto, max_repeat: 101}}\n",
)
spec("parallel_huge", "parallel: 10^6 threads", "run: {parallel: 1000000}\n")
spec(
    "integer_5000_digits",
    "an integer Python refuses to convert",
    "run: {repeat: " + "9" * 5000 + "}\n",
)
bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)
]
(OUT / "alias_bomb.yaml").write_text(
    "# billion laughs: 10^9 nodes through aliases\n"
    + HEAD.format(name="alias-bomb")
    + RUN
    + EXPECT
    + "bombs:\n"
    + "".join(f"  {line}\n" for line in bomb)
)
chain = "".join(f"  d{i}: &d{i} [[[*d{i - 1}]]]\n" for i in range(1, 60))
(OUT / "alias_depth.yaml").write_text(
    "# shallow text, deep tree: aliases nest 180 levels\n"
    + HEAD.format(name="alias-depth")
    + RUN
    + EXPECT
    + "deep:\n  d0: &d0 [x]\n"
    + chain
)
merges = "".join(f"  m{i}: &m{i} {{<<: *m{i - 1}, k{i}: {i}}}\n" for i in range(1, 150))
(OUT / "merge_chain.yaml").write_text(
    "# 150 merge keys chained: recursion without visible nesting\n"
    + HEAD.format(name="merge-chain")
    + RUN
    + EXPECT
    + "extra:\n  m0: &m0 {k0: 0}\n"
    + merges
)
# ---- nesting, length, bytes (item 6)
spec("flow_seq_nesting_1e4", "10^4 levels of [", "labels: " + "[" * 10000 + "]" * 10000 + "\n")
spec("flow_seq_nesting_1e5", "10^5 levels of [ never closed", "labels: " + "[" * 100000 + "\n")
spec(
    "flow_map_nesting_1e4",
    "10^4 levels of {a:",
    "labels: " + "{a: " * 10000 + "1" + "}" * 10000 + "\n",
)
spec(
    "block_seq_nesting",
    "150 levels of block sequences",
    "labels:\n" + "".join("  " * (i + 1) + "-\n" for i in range(150)) + "  " * 152 + "x\n",
)
spec(
    "block_map_nesting",
    "200 levels of block mappings",
    "environment:\n"
    + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(200))
    + "  " * 201
    + "x\n",
)
spec(
    "expr_parens_1e4",
    "10^4 levels of ${{ }} parentheses",
    "environment: {env: {X: '${{ " + "(" * 10000 + "1" + ")" * 10000 + " }}'}}\n",
)
spec(
    "expr_parens_40",
    "40 levels of parentheses (short enough, too deep)",
    "environment: {env: {X: '${{ " + "(" * 40 + "1" + ")" * 40 + " }}'}}\n",
)
spec(
    "expr_not_chain",
    "not not not ... 50 times",
    "environment: {env: {X: '${{ " + "not " * 50 + "true }}'}}\n",
)
spec(
    "expr_or_chain",
    "a chain of 100 or: a deep tree from flat text",
    "environment: {env: {X: '${{ " + " or ".join(["false"] * 100) + " }}'}}\n",
)
spec(
    "expr_list_nesting",
    "[[[...]]] 60 levels inside ${{ }}",
    "environment: {env: {X: '${{ " + "[" * 60 + "]" * 60 + " }}'}}\n",
)
spec(
    "expr_too_long",
    "one expression of 3000 characters",
    "environment: {env: {X: \"${{ '" + "x" * 3000 + "' }}\"}}\n",
)
spec(
    "expr_10000_expressions_of_depth",
    "a deep expression repeated",
    "environment: {env: {X: '" + ("${{ " + "(" * 33 + "1" + ")" * 33 + " }}") * 50 + "'}}\n",
)
raw(
    "nul_byte",
    b"# a raw NUL byte in the text\nreprospec: 1\nname: nul-byte\ncommand: touch EXECUTED\x00\nexpect: {outcome: pass}\n",
)
raw(
    "bell_c0",
    b"# a raw BEL (C0 control)\nreprospec: 1\nname: bell\ncommand: touch EXECUTED\x07\nexpect: {outcome: pass}\n",
)
raw(
    "csi_c1",
    "# a raw U+009B (C1 CSI)\nreprospec: 1\nname: csi\ntitle: \u009b31m red\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n".encode(),
)
raw(
    "escape_sequence",
    b"# a raw ESC [ 2J (clear the screen) in a title\nreprospec: 1\nname: esc\ntitle: \x1b[2J\x1b]0;pwned\x07\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n",
)
raw(
    "backspace_in_key",
    b"# a backspace inside a key\nreprospec: 1\nname: bs\ncommand: touch EXECUTED\nexpe\x08ct: {outcome: pass}\n",
)
raw(
    "del_char",
    b"# a raw DEL (0x7f)\nreprospec: 1\nname: del\ncommand: touch EXECUTED\x7f\nexpect: {outcome: pass}\n",
)
(OUT / "nul_escaped_in_command.yaml").write_text(
    '# a "\\0" escape puts a NUL into argv\nreprospec: 1\nname: nul-argv\ncommand: ["touch", "EXECUTED\\0x"]\nexpect: {outcome: pass}\n'
)
(OUT / "nul_escaped_in_env.yaml").write_text(
    '# a NUL in an environment variable\nreprospec: 1\nname: nul-env\ncommand: touch EXECUTED\nenvironment: {env: {X: "a\\0b"}}\nexpect: {outcome: pass}\n'
)
(OUT / "nul_from_matrix.yaml").write_text(
    '# a NUL that a matrix value brings into a shell command\nreprospec: 1\nname: nul-matrix\ncommand: touch EXECUTED ${{ matrix.f }}\nmatrix: {f: ["a\\0b"]}\nexpect: {outcome: pass}\n'
)
raw(
    "latin1",
    "# latin-1, not UTF-8\nreprospec: 1\nname: latin\ntitle: caf\u00e9\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n".encode(
        "latin-1"
    ),
)
raw(
    "bad_continuation",
    b"# a lead byte without its continuation on line 5\nreprospec: 1\nname: cont\ncommand: touch EXECUTED\ntitle: ok \xe2\x82 then\nexpect: {outcome: pass}\n",
)
raw(
    "utf16",
    "reprospec: 1\nname: utf16\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n".encode(
        "utf-16"
    ),
)
raw(
    "overlong_nul",
    b"# an overlong encoding of NUL (0xc0 0x80)\nreprospec: 1\nname: overlong\ncommand: touch EXECUTED\xc0\x80\nexpect: {outcome: pass}\n",
)
raw(
    "encoded_surrogate",
    b"# a UTF-16 surrogate encoded in UTF-8 (CESU)\nreprospec: 1\nname: sur\ntitle: \xed\xa0\x80\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n",
)
raw(
    "truncated_utf8_at_end",
    b"# the file ends inside a character\nreprospec: 1\nname: trunc\ncommand: touch EXECUTED\nexpect: {outcome: pass}\ntitle: \xf0\x9f\x98",
)
# ---- accepted but wrong (item 7)
spec("timeout_nan_literal", ".nan timeout would disable the timeout", "run: {timeout: .nan}\n")
spec("timeout_inf_literal", ".inf timeout would disable the timeout", "run: {timeout: .inf}\n")
spec(
    "timeout_nan_from_matrix",
    ".nan timeout through an expression",
    "matrix: {t: [.nan, 5]}\nrun: {timeout: '${{ matrix.t }}'}\n",
)
spec(
    "timeout_negative_from_expr",
    "a negative timeout through an expression",
    "run: {timeout: '${{ -5 }}'}\n",
)
spec(
    "timeout_zero_seconds_from_matrix",
    "a 0s timeout from the matrix",
    "matrix: {t: [0s, 5s]}\nrun: {timeout: '${{ matrix.t }}'}\n",
)
spec(
    "timeout_per_attempt",
    "a timeout that goes negative on attempt 3",
    "run: {repeat: 3, timeout: '${{ attempt == 3 and -1 or 10 }}'}\n",
)
spec(
    "timeout_null_from_env",
    "an unset variable makes a null timeout",
    "run: {timeout: '${{ env.REPROSPEC_ADVERSARIAL_UNSET }}'}\n",
)
spec(
    "memory_word_from_matrix",
    "memory: 'lots' through the matrix",
    "matrix: {m: [4g, lots]}\nenvironment: {memory: '${{ matrix.m }}'}\n",
)
spec(
    "memory_negative_from_matrix",
    "memory: -1 through the matrix",
    "matrix: {m: [-1]}\nenvironment: {memory: '${{ matrix.m }}'}\n",
)
spec(
    "memory_nan_from_expr",
    "memory: .nan through an expression",
    "matrix: {m: [.nan]}\nenvironment: {memory: '${{ matrix.m }}'}\n",
)
spec("shm_size_word_from_expr", "shm_size: 'huge'", "environment: {shm_size: \"${{ 'huge' }}\"}\n")
spec(
    "gpus_word_from_matrix",
    "gpus: 'two'",
    "matrix: {g: [two]}\nenvironment: {gpus: '${{ matrix.g }}'}\n",
)
spec(
    "gpus_negative_from_matrix",
    "gpus: -1",
    "matrix: {g: [-1, 0]}\nenvironment: {gpus: '${{ matrix.g }}'}\n",
)
spec("gpus_boolean_from_expr", "gpus: true", "environment: {gpus: '${{ true }}'}\n")
spec("gpus_float_from_expr", "gpus: 1.5", "environment: {gpus: '${{ 1.5 }}'}\n")
spec(
    "device_from_matrix",
    "device: tpu",
    "matrix: {d: [cpu, tpu]}\nenvironment: {device: '${{ matrix.d }}'}\n",
)
spec("network_word_from_expr", "network: 'maybe'", "environment: {network: \"${{ 'maybe' }}\"}\n")
(OUT / "expect_message_bad_regex.yaml").write_text(
    "# expect.message that never compiles\nreprospec: 1\nname: msg\ncommand: touch EXECUTED\nexpect: {outcome: error, message: 'cuda error: ('}\n"
)
(OUT / "case_message_bad_regex.yaml").write_text(
    "# a case's message that never compiles\nreprospec: 1\nname: case-msg\ncommand: touch EXECUTED\nmatrix: {a: [1, 2]}\nexpect:\n  outcome: error\n  cases:\n    - {when: {a: 1}, message: '[z-a]'}\n"
)
(OUT / "expect_message_regex_from_matrix.yaml").write_text(
    "# expect.message from the matrix that never compiles\nreprospec: 1\nname: msg-matrix\ncommand: touch EXECUTED\nmatrix: {p: ['ok', '(']}\nexpect: {outcome: error, message: '${{ matrix.p }}'}\n"
)
(OUT / "marker_regex_from_matrix.yaml").write_text(
    "# a marker pattern from the matrix that never compiles\nreprospec: 1\nname: marker-matrix\ncommand: touch EXECUTED\nmatrix: {p: ['(?P<phase>x']}\nmarkers: [{pattern: '${{ matrix.p }}'}]\nexpect: {outcome: pass}\n"
)
(OUT / "marker_regex_regex_only.yaml").write_text(
    "# \\p{L} compiles in the regex package but not in Python's re\nreprospec: 1\nname: marker-p\ncommand: touch EXECUTED\nmarkers: [{pattern: '\\p{L}+ (?P<step>\\d+)'}]\nexpect: {outcome: pass}\n"
)
(OUT / "marker_regex_huge_repeat.yaml").write_text(
    "# a repetition count re cannot hold\nreprospec: 1\nname: marker-rep\ncommand: touch EXECUTED\nmarkers: [{pattern: 'a{99999999999} (?P<step>\\d+)'}]\nexpect: {outcome: pass}\n"
)
(OUT / "step_reversed_from_expr.yaml").write_text(
    "# a reversed step range from an expression\nreprospec: 1\nname: step-expr\ncommand: touch EXECUTED\nexpect: {outcome: error, step: \"${{ '9..3' }}\"}\n"
)
spec(
    "include_key_with_space",
    "an include key that is no axis name",
    "matrix: {a: [1], include: [{'a b': 1}]}\n",
)
spec(
    "include_key_reserved",
    "an include key named exclude",
    "matrix: {a: [1], include: [{exclude: 1}]}\n",
)
spec(
    "include_key_expression",
    "an include key that looks like an expression",
    "matrix: {a: [1], include: [{'${{ env.HOME }}': 1}]}\n",
)
spec(
    "exclude_key_with_dot",
    "an exclude key with a dot",
    "matrix: {a: [1, 2], exclude: [{'a.b': 1}]}\n",
)
(OUT / "argv_item_list_from_matrix.yaml").write_text(
    "# a list where an argv item goes\nreprospec: 1\nname: argv-list\ncommand: [touch, EXECUTED, '${{ matrix.l }}']\nmatrix: {l: [[1, 2]]}\nexpect: {outcome: pass}\n"
)
spec(
    "env_value_mapping_from_matrix",
    "a mapping where an environment value goes",
    "matrix: {v: [{a: 1}]}\nenvironment: {env: {X: '${{ matrix.v }}'}}\n",
)
spec(
    "evaluation_error_in_one_cell",
    "a comparison that fails in one cell only",
    "matrix: {n: [1, x]}\nenvironment: {env: {X: '${{ matrix.n > 0 }}'}}\n",
)
(OUT / "num_workers_negative_from_expr.yaml").write_text(
    "# num_workers: -1 through the matrix\nreprospec: 1\nname: workers\nworkload:\n  model: {builtin: mlp}\n  data:\n    dataset: {builtin: synthetic}\n    loader: {num_workers: '${{ matrix.w }}'}\nmatrix: {w: [0, -1]}\nexpect: {outcome: pass}\n"
)
# ---- YAML 1.1 surprises
(OUT / "yaml11_booleans_in_when.yaml").write_text(
    "# [on, off] are strings: a case written for booleans matches no cell\nreprospec: 1\nname: onoff\ncommand: touch EXECUTED\nmatrix: {parallel_compile: [on, off]}\nexpect:\n  outcome: pass\n  cases:\n    - {when: {parallel_compile: true}, outcome: crash}\n"
)
(OUT / "yaml11_yes_key.yaml").write_text(
    "# yes: is a key named yes, not true\nreprospec: 1\nname: yes-key\ncommand: touch EXECUTED\nyes: 1\nexpect: {outcome: pass}\n"
)
(OUT / "yaml11_sexagesimal_timeout.yaml").write_text(
    "# 1:30 is a string, not 90 seconds\nreprospec: 1\nname: sexa\ncommand: touch EXECUTED\nrun: {timeout: 1:30}\nexpect: {outcome: pass}\n"
)
(OUT / "yaml11_underscore_repeat.yaml").write_text(
    "# 1_000 is a string in YAML 1.2\nreprospec: 1\nname: underscore\ncommand: touch EXECUTED\nrun: {repeat: 1_000}\nexpect: {outcome: pass}\n"
)
# ---- tags, structure, oddities
(OUT / "python_name_tag_key.yaml").write_text(
    "# a python tag as a key\nreprospec: 1\nname: tag-key\ncommand: touch EXECUTED\n!!python/name:os.system : 1\nexpect: {outcome: pass}\n"
)
(OUT / "python_object_new.yaml").write_text(
    "# object/new runs code in pyyaml's unsafe loaders\nreprospec: 1\nname: obj-new\ncommand: !!python/object/new:os.system [touch EXECUTED]\nexpect: {outcome: pass}\n"
)
(OUT / "binary_not_base64.yaml").write_text(
    "# !!binary that is not base64\nreprospec: 1\nname: binary\ncommand: touch EXECUTED\ntitle: !!binary 'not base64 at all!'\nexpect: {outcome: pass}\n"
)
(OUT / "timestamp_impossible.yaml").write_text(
    "# !!timestamp 2024-13-45\nreprospec: 1\nname: ts\ncommand: touch EXECUTED\ntitle: !!timestamp 2024-13-45\nexpect: {outcome: pass}\n"
)
(OUT / "float_tag_word.yaml").write_text(
    "# !!float on a word\nreprospec: 1\nname: float-tag\ncommand: touch EXECUTED\nrun: {timeout: !!float soon}\nexpect: {outcome: pass}\n"
)
(OUT / "int_tag_word.yaml").write_text(
    "# !!int on a word\nreprospec: 1\nname: int-tag\ncommand: touch EXECUTED\nrun: {repeat: !!int three}\nexpect: {outcome: pass}\n"
)
(OUT / "set_as_command.yaml").write_text(
    "# a !!set where a command goes\nreprospec: 1\nname: set-cmd\ncommand: !!set {touch, EXECUTED}\nexpect: {outcome: pass}\n"
)
(OUT / "undefined_alias.yaml").write_text(
    "# an alias to nothing\nreprospec: 1\nname: alias\ncommand: touch EXECUTED\nlabels: *nowhere\nexpect: {outcome: pass}\n"
)
(OUT / "duplicate_anchor.yaml").write_text(
    "# one anchor defined twice\nreprospec: 1\nname: anchor\ncommand: touch EXECUTED\nlabels: [&a x, &a y]\nexpect: {outcome: pass}\n"
)
(OUT / "two_documents.yaml").write_text(
    "# a second document that would override the first\nreprospec: 1\nname: first\ncommand: 'true'\nexpect: {outcome: pass}\n---\nreprospec: 1\nname: second\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"
)
(OUT / "tab_indentation.yaml").write_text(
    "# a tab where indentation goes\nreprospec: 1\nname: tab\ncommand: touch EXECUTED\nexpect:\n\toutcome: pass\n"
)
(OUT / "key_100k_chars.yaml").write_text(
    "# an unknown key of 100,000 characters\nreprospec: 1\nname: long-key\ncommand: touch EXECUTED\n? "
    + "k" * 100000
    + "\n: 1\nexpect: {outcome: pass}\n"
)
(OUT / "simple_key_too_long.yaml").write_text(
    "# a plain key longer than YAML's 1024 characters\nreprospec: 1\nname: simple-key\ncommand: touch EXECUTED\n"
    + "k" * 2000
    + ": 1\nexpect: {outcome: pass}\n"
)
(OUT / "collection_as_key.yaml").write_text(
    "# a list as a mapping key\nreprospec: 1\nname: list-key\ncommand: touch EXECUTED\n[a, b]: 1\nexpect: {outcome: pass}\n"
)
(OUT / "many_unknown_keys.yaml").write_text(
    "# 5,000 unknown keys: every one reported, none crashes\nreprospec: 1\nname: many\ncommand: touch EXECUTED\nexpect: {outcome: pass}\n"
    + "".join(f"k{i}: {i}\n" for i in range(5000))
)
(OUT / "report_with_nul.md").write_text(
    "# Report\n\n```yaml\nreprospec: 1\nname: report-nul\ncommand: touch EXECUTED\x00\nexpect: {outcome: pass}\n```\n"
)
print(len(list(OUT.iterdir())))
