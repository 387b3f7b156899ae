"""Flatten the JSON conformance vectors into one line of words per case.

The C test (kvhash_test.c) reads this format so that it needs no JSON
parser. This script only reformats: it computes no hash, so the expected
values stay the oracle's. Usage: flatten_vectors.py FILE.json... > vectors.txt

Output, words separated by single spaces:

    count N                                 first line: the number of cases
    block ID BS EAGLE LORA NS NTOK T... MM SEED NB B... NS S...
    error ID BS EAGLE LORA NS NTOK T... MM REASON
    seed  ID LORA NS SEED
    chain ID N B... N S...
    raw   ID HEX HASH

ID is group/name. A string (LORA, NS) is "-" for null, "~" for "" and
otherwise the hex of its UTF-8 bytes; HEX is "-" for no bytes. MM is "-"
for null, else K (the entry count) then K entries, each "-" for null or C
(its count) then C values. u64 values stay the decimal strings of the
JSON. A kind this script does not know is an error, never skipped.
"""

import json
import sys


def text(s):
    if s is None:
        return "-"
    if s == "":
        return "~"
    return s.encode("utf-8").hex()


def u64(s):
    # The vectors' number rule: u64 values are decimal strings.
    if not isinstance(s, str) or not s.isdigit():
        raise ValueError(f"u64 {s!r} is not a decimal string")
    return s


def counted(values, conv=str):
    return [str(len(values))] + [conv(v) for v in values]


def mm(entries):
    if entries is None:
        return ["-"]
    words = [str(len(entries))]
    for e in entries:
        words += ["-"] if e is None else counted(e, u64)
    return words


def prompt(case):
    opts = case["options"]
    if set(opts) != {"lora_name", "cache_namespace", "eagle", "mm_hashes"}:
        raise ValueError(f"unexpected options {sorted(opts)}")
    return ([str(case["block_size"]), "1" if opts["eagle"] else "0",
             text(opts["lora_name"]), text(opts["cache_namespace"])]
            + counted(case["tokens"]) + mm(opts["mm_hashes"]))


def flatten(group, case):
    kind, ident = case["kind"], f"{group}/{case['name']}"
    if " " in ident:
        raise ValueError(f"case id {ident!r} has a space")
    if kind == "block":
        words = prompt(case) + [u64(case["seed"])]
        words += counted(case["block_hashes"], u64) + counted(case["sequence_hashes"], u64)
    elif kind == "error":
        words = prompt(case) + [case["error"]]
    elif kind == "seed":
        words = [text(case["lora_name"]), text(case["cache_namespace"]), u64(case["seed"])]
    elif kind == "chain":
        words = counted(case["block_hashes"], u64) + counted(case["sequence_hashes"], u64)
    elif kind == "raw":
        words = [case["bytes_hex"] or "-", u64(case["hash"])]
    else:
        raise ValueError(f"{ident}: unknown case kind {kind!r}")
    return " ".join([kind, ident] + words)


def main(paths):
    if not paths:
        sys.exit("usage: flatten_vectors.py FILE.json...")
    lines = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        lines += [flatten(doc["group"], case) for case in doc["cases"]]
    print(f"count {len(lines)}")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
