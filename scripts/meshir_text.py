"""MeshIR text as wavel-dse prints it (src/meshir/text.cpp: one header item, region or op per line),
read for plotting, and the search's work units (blocks) that op names belong to. Used by
plot_results.py."""

import re

from wavel_results import NotResults

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def unquote(token):
    body, out, i = token[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            e = body[i + 1]
            if e == "x" and i + 3 < len(body):
                out.append(chr(int(body[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(ESCAPES.get(e, e))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def split_line(line):
    """Whitespace-separated pieces; double quotes protect spaces and '#', '#' outside quotes is a comment."""
    pieces, current, in_quotes, i = [], "", False, 0
    while i < len(line):
        c = line[i]
        if in_quotes:
            current += c
            if c == "\\" and i + 1 < len(line):
                current += line[i + 1]
                i += 1
            elif c == '"':
                in_quotes = False
        elif c == '"':
            in_quotes = True
            current += c
        elif c == "#":
            break
        elif c.isspace():
            if current:
                pieces.append(current)
            current = ""
        else:
            current += c
        i += 1
    if current:
        pieces.append(current)
    return pieces


def parse_meshir(text):
    """{'name', 'grid': (w, h), 'defects': [(x, y)], 'regions': [(x, y, w, h)], 'ops': [dict], ...}."""
    s = {"name": "", "grid": None, "defects": [], "regions": {}, "ops": [], "layers": None, "scale": 1.0,
         "microbatches": 1, "requests": 1, "wafers": 1, "io_edge": "west", "region_wafer": {}}
    for number, line in enumerate(text.splitlines(), 1):
        p = split_line(line)
        if not p:
            continue
        try:
            key = p[0]
            if key == "schedule":
                s["name"] = unquote(p[1])
            elif key == "grid":
                s["grid"] = (int(p[1]), int(p[2]))
            elif key == "defect":
                s["defects"].append((int(p[1]), int(p[2])))
            elif key == "layers":
                s["layers"], s["scale"] = int(p[1]), float(p[3])
            elif key in ("microbatches", "requests"):
                s[key] = int(p[1])
            elif key == "region":
                s["regions"][int(p[1])] = tuple(int(v) for v in p[2:6])
                s["region_wafer"][int(p[1])] = int(p[7]) if len(p) >= 8 and p[6] == "wafer" else 0
            elif key == "wafers":
                s["wafers"], s["io_edge"] = int(p[1]), p[7]
            elif key == "op":
                op = {"index": int(p[1]), "name": unquote(p[2])}
                for piece in p[3:]:
                    field, _, value = piece.partition("=")
                    op[field] = value
                op["region"] = int(op["region"])
                op["to_region"] = int(op.get("to_region", "-1"))
                op["used"] = tuple(int(v) for v in op["used"].split(","))
                op["stage"] = int(op.get("stage", "0"))
                s["ops"].append(op)
        except (IndexError, ValueError, KeyError) as error:
            raise NotResults(f"MeshIR line {number}: cannot read '{line[:80]}': {error}") from error
    if s["grid"] is None:
        raise NotResults("MeshIR text has no grid line")
    return s


ATTENTION_OPS = re.compile(r"attn|q_proj|k_proj|v_proj|o_proj|rope|kv_|softmax|kv_a|kv_b|q_a|q_b")


def block_of(name, layers):
    """The search's work unit an op belongs to, as an ordinal: embed, layer i attention / FFN, head."""
    if name.startswith("embed"):
        return 0
    match = re.match(r"layer\.(\d+)\.(.*)", name)
    if match:
        layer, rest = int(match.group(1)), match.group(2)
        return 1 + 2 * layer + (0 if ATTENTION_OPS.search(rest) else 1)
    if name.startswith("head"):
        return 1 + 2 * (layers if layers else 10 ** 6)
    return None  # transfers, re-layouts and other movers belong to no block


def block_text(block, layers):
    if block == 0:
        return "embed"
    if layers is not None and block == 1 + 2 * layers or block >= 10 ** 6:
        return "head"
    layer, part = divmod(block - 1, 2)
    return f"L{layer}{'a' if part == 0 else 'f'}"


def blocks_label(blocks, layers):
    """Consecutive runs of blocks as compact text, e.g. 'embed, L0-L3, L4a' (a: attention, f: FFN/MoE)."""
    runs, start, previous = [], None, None
    for b in sorted(blocks):
        if start is None:
            start = previous = b
        elif b == previous + 1:
            previous = b
        else:
            runs.append((start, previous))
            start = previous = b
    if start is not None:
        runs.append((start, previous))
    parts = []
    head = 1 + 2 * layers if layers is not None else None
    for a, b in runs:
        pieces = []
        if a == 0:
            pieces.append("embed")
            a = 1
        tail = None
        if head is not None and b == head:
            tail = "head"
            b -= 1
        if a <= b:
            first, last = block_text(a, layers), block_text(b, layers)
            if (a - 1) % 2 == 0 and (b - 1) % 2 == 1:  # whole layers: drop the a/f suffixes
                first, last = first[:-1], last[:-1]
            pieces.append(first if first == last else f"{first}–{last}")
        if tail:
            pieces.append(tail)
        parts.append(", ".join(pieces))
    return ", ".join(parts) or "(movers only)"
