"""What each instruction of an optimized XLA HLO module computes, read from its text
(``compiled.as_text()``): output and operand shapes, the FLOPs of its dots and of its elementwise
ops counted the way XLA's cost analysis counts them (``2 * out * contracted`` for a dot, one per
output element of an arithmetic op, one per input element of a reduce), the bytes it reads and
writes, and whether it belongs to the forward or the backward pass of a ``value_and_grad``
(JAX names every op of the backward ``transpose(...)`` in the metadata it hands XLA).
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Iterable

# one HLO instruction: `  [ROOT ]%name = <shape> <opcode>(<operands>)<, attributes>`
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+)\s*=\s*(\(.*?\)|\w+\[[\d,]*\](?:\{[^}]*\})?)"
                    r"\s+([\w\-]+)\((.*?)\)(.*)$")
_COMP = re.compile(r"^(?:ENTRY\s+)?%([\w.\-]+)\s.*\{\s*$")
_ARRAY = re.compile(r"(\w+)\[([\d,]*)\]")
_BYTES = {"f64": 8, "s64": 8, "u64": 8, "f32": 4, "s32": 4, "u32": 4, "f16": 2, "bf16": 2,
          "s16": 2, "u16": 2, "s8": 1, "u8": 1, "pred": 1}
# opcodes XLA's cost analysis counts as one FLOP per output element
_ELEMENTWISE = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "exp",
                "log", "tanh", "rsqrt", "sqrt", "power", "abs", "compare", "select", "exponential",
                "log-plus-one", "exponential-minus-one", "logistic", "erf", "sign", "floor",
                "ceil", "clamp", "and", "or", "not", "xor", "remainder", "atan2", "cosine", "sine"}
# jaxpr name prefixes that mark an op of the backward pass (JAX transposes the linearized forward)
_BACKWARD = "transpose("


@dataclasses.dataclass
class Instr:
    name: str
    shape: str                 # as HLO prints it, without layout: "f32[512,16,128]"
    opcode: str
    operands: list[str]
    attrs: str
    op_names: list[str]        # metadata op_name of this instruction


@dataclasses.dataclass
class Op:
    """One instruction of a top-level computation, what it computes and where it came from."""
    name: str
    opcode: str
    shape: str
    operand_shapes: list[str]
    dot_flops: float           # of the dots / convolutions in it (or it)
    flops: float               # dots + elementwise + reductions
    bytes: float               # operands read + output written, once each
    dots: list[str]            # "lhs x rhs -> out" of each dot in it
    op_names: list[str]        # distinct jaxpr op names of it and its fused body
    pass_: str                 # "backward", "forward" or "other" (parameters, constants)


def _array_dims(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    return [(t, tuple(int(d) for d in dims.split(",") if d))
            for t, dims in _ARRAY.findall(shape)]


def _elements(shape: str) -> int:
    return sum(math.prod(d) for _, d in _array_dims(shape))


def _nbytes(shape: str) -> int:
    return sum(math.prod(d) * _BYTES.get(t, 4) for t, d in _array_dims(shape))


def _strip_layout(shape: str) -> str:
    return re.sub(r"\{[^}]*\}", "", shape)


def parse_hlo(text: str) -> dict[str, list[Instr]]:
    """``{computation name: instructions}`` of an HLO module's text."""
    comps: dict[str, list[Instr]] = {}
    current: list[Instr] | None = None
    for line in text.splitlines():
        m = _COMP.match(line)
        if m and "=" not in line.split("(")[0]:
            current = comps.setdefault(m.group(1), [])
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _INSTR.match(line)
        if m and current is not None:
            name, shape, opcode, operands, attrs = m.groups()
            current.append(Instr(name, _strip_layout(shape), opcode,
                                 re.findall(r"%([\w.\-]+)", operands), attrs,
                                 re.findall(r'op_name="([^"]*)"', attrs)))
    return comps


def _dims_attr(attrs: str, key: str) -> tuple[int, ...]:
    m = re.search(key + r"=\{([\d,]*)\}", attrs)
    return tuple(int(d) for d in m.group(1).split(",") if d) if m else ()


def _body_cost(comps: dict[str, list[Instr]], comp: str) -> tuple[float, float, list[str],
                                                                   list[str]]:
    """(dot FLOPs, all FLOPs, dots, op names) of a fused computation, nested fusions included."""
    shapes = {i.name: i.shape for i in comps.get(comp, [])}
    dot_flops = flops = 0.0
    dots: list[str] = []
    names: list[str] = []
    for ins in comps.get(comp, []):
        names += ins.op_names
        d, f, ds, ns = _instr_cost(comps, ins, shapes)
        dot_flops, flops, dots, names = dot_flops + d, flops + f, dots + ds, names + ns
    return dot_flops, flops, dots, names


def _instr_cost(comps: dict[str, list[Instr]], ins: Instr, shapes: dict[str, str]
                ) -> tuple[float, float, list[str], list[str]]:
    """(dot FLOPs, FLOPs, dots, op names of a fused body) of one instruction."""
    if ins.opcode == "dot":
        lhs = _array_dims(shapes.get(ins.operands[0], ""))
        axes = _dims_attr(ins.attrs, "lhs_contracting_dims")
        contracted = math.prod(lhs[0][1][i] for i in axes) if lhs else 0
        f = 2.0 * _elements(ins.shape) * contracted
        desc = " x ".join(shapes.get(o, "?") for o in ins.operands[:2]) + f" -> {ins.shape}"
        return f, f, [desc], []
    if ins.opcode == "fusion":
        called = re.search(r"calls=%([\w.\-]+)", ins.attrs)
        return _body_cost(comps, called.group(1)) if called else (0.0, 0.0, [], [])
    if ins.opcode in ("reduce", "reduce-window"):
        return 0.0, float(_elements(shapes.get(ins.operands[0], ""))), [], []
    if ins.opcode in _ELEMENTWISE:
        return 0.0, float(_elements(ins.shape)), [], []
    return 0.0, 0.0, [], []


def _pass_of(names: Iterable[str], operand_passes: Iterable[str]) -> str:
    """An op is of the backward pass if it came from a transposed op or reads a value of the
    backward (forward values never depend on the cotangent); of the forward if it came from a
    forward op or reads one. XLA leaves some fusions without metadata: those take their
    operands' pass."""
    names, operand_passes = list(names), list(operand_passes)
    if any(_BACKWARD in n for n in names) or "backward" in operand_passes:
        return "backward"
    if any("jvp(" in n or "jit(" in n for n in names) or "forward" in operand_passes:
        return "forward"
    return "other"


_NO_WORK = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def hlo_ops(text: str) -> dict[str, Op]:
    """``{instruction name: Op}`` of the entry computation (and of the computations it runs as
    while / conditional / call bodies), the ops a trace names."""
    comps = parse_hlo(text)
    fused = set(re.findall(r"calls=%([\w.\-]+)", text)) | set(re.findall(r"to_apply=%([\w.\-]+)",
                                                                         text))
    top = [c for c in comps if c not in fused]
    ops: dict[str, Op] = {}
    passes: dict[str, str] = {}
    for comp in top:
        shapes = {i.name: i.shape for i in comps[comp]}
        for ins in comps[comp]:  # scheduled HLO lists operands before their users
            dot_flops, flops, dots, body_names = _instr_cost(comps, ins, shapes)
            names = list(dict.fromkeys(ins.op_names + body_names))
            passes[ins.name] = _pass_of(names, [passes.get(o, "other") for o in ins.operands])
            if ins.opcode in _NO_WORK:
                continue
            operand_shapes = [shapes.get(o, "?") for o in ins.operands]
            ops[ins.name] = Op(ins.name, ins.opcode, ins.shape, operand_shapes, dot_flops, flops,
                               float(_nbytes(ins.shape) + sum(_nbytes(s) for s in operand_shapes)),
                               dots, names, passes[ins.name])
    return ops
