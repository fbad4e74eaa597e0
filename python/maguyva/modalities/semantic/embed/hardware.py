"""What the machine offers the local embedder: onnxruntime's execution providers (a GPU when
one is there, with no setting) and the CPU's int8 instructions (for the compute floor that
docs/semantic-embedder.md measures the embedder against).

Read at run time, never assumed: `/proc/cpuinfo` flags and `onnxruntime.get_available_providers()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GPU_PROVIDERS = ("CUDAExecutionProvider",)
"""Used first when onnxruntime lists them (a GPU build of onnxruntime on a machine with its
driver); the CPU provider stays last, for the nodes a GPU provider does not implement."""
CPU_PROVIDER = "CPUExecutionProvider"


def execution_providers(available: list[str]) -> list[str]:
    """The providers to open a session with, from what this onnxruntime build offers: CUDA
    first when listed, the CPU always (every onnxruntime build has it)."""
    return [p for p in GPU_PROVIDERS if p in available] + [CPU_PROVIDER]


INT8_MACS_PER_CYCLE = {
    "amx_int8": 1024,  # AMX TDPBUSD: a 16x64 by 64x16 tile product every 16 cycles
    "avx512_vnni": 128,  # VPDPBUSD zmm: 64 u8 x s8 products, two ports
    "avx_vnni": 64,  # VPDPBUSD ymm: 32 products, two ports
    "avx2": 32,  # VPMADDUBSW + VPMADDWD: 32 products in about two instructions' time, two ports
}
"""Peak int8 multiply-accumulates per cycle and core of each instruction set (the published
instruction widths and throughputs; a ceiling, not a measurement)."""

HALF_WIDTH_AVX512 = {("AuthenticAMD", 25)}
"""(vendor, family) whose cores run a 512-bit instruction as two 256-bit halves (AMD Zen 4):
AVX-512 VNNI peaks at half the table's rate there (64 products per cycle)."""


@dataclass(frozen=True, slots=True)
class Cpu:
    """The CPU's name, clock (MHz, as the kernel reports it) and int8 instruction sets."""

    model: str
    mhz: float
    int8: tuple[str, ...]  # best first, among INT8_MACS_PER_CYCLE's keys
    half_width_avx512: bool = False  # 512-bit instructions in two halves (HALF_WIDTH_AVX512)

    def peak_macs(self, isa: str | None = None) -> float:
        """Int8 multiply-accumulates per second and core with `isa` (default: the best)."""
        isa = isa or (self.int8[0] if self.int8 else None)
        per_cycle = INT8_MACS_PER_CYCLE.get(isa or "", 0)
        if isa == "avx512_vnni" and self.half_width_avx512:
            per_cycle //= 2
        return per_cycle * self.mhz * 1e6


def read_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> Cpu:
    """The first processor of `/proc/cpuinfo` (no file, e.g. not Linux: an empty Cpu)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return Cpu("", 0.0, ())
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    try:
        mhz = float(fields.get("cpu MHz", "0"))
    except ValueError:
        mhz = 0.0
    found = tuple(isa for isa in INT8_MACS_PER_CYCLE if isa in flags)
    family = fields.get("cpu family", "")
    half = (fields.get("vendor_id", ""), int(family) if family.isdigit() else -1)
    return Cpu(fields.get("model name", ""), mhz, found, half in HALF_WIDTH_AVX512)


def encoder_macs_per_token(layers: int, hidden: int, ffn: int, seq: float) -> float:
    """Multiply-accumulates per token of a BERT-style encoder: the Q, K, V and output
    projections (4 h^2), the feed-forward (2 h ffn) and attention's scores and mix over a
    sequence of `seq` tokens (2 h seq), per layer. The embedding lookup costs no products."""
    return layers * (4 * hidden * hidden + 2 * hidden * ffn + 2 * hidden * seq)
