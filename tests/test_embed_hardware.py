"""The local embedder's execution providers come from what onnxruntime offers, and the CPU's
int8 instructions are read from /proc/cpuinfo (the compute floor of
docs/semantic-embedder.md)."""

from __future__ import annotations

from pathlib import Path

from maguyva.modalities.semantic.embed import MiniLMProvider
from maguyva.modalities.semantic.embed.hardware import execution_providers, read_cpu


def test_cuda_is_used_when_onnxruntime_lists_it() -> None:
    gpu = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    assert execution_providers(gpu) == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert execution_providers(["CPUExecutionProvider"]) == ["CPUExecutionProvider"]


def test_the_real_session_runs_on_what_is_available() -> None:
    import onnxruntime as ort

    provider = MiniLMProvider(threads=1)
    provider.embed(["def f(): pass"], "document")
    session = provider._sessions[1]
    assert session.get_providers() == execution_providers(ort.get_available_providers())


def test_int8_instructions_are_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("model name\t: Test CPU\ncpu MHz\t\t: 2000.0\nflags\t\t: fpu avx2 avx512_vnni\n"
                    "\nmodel name\t: other\n")  # fmt: skip
    cpu = read_cpu(info)
    assert (cpu.model, cpu.mhz, cpu.int8) == ("Test CPU", 2000.0, ("avx512_vnni", "avx2"))
    assert cpu.peak_macs() == 128 * 2000.0e6
    assert read_cpu(tmp_path / "missing").int8 == ()


def test_zen4_counts_half_width_avx512(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel name\t: AMD EPYC\n"
                    "cpu MHz\t\t: 2000.0\nflags\t\t: avx2 avx512_vnni\n")  # fmt: skip
    cpu = read_cpu(info)
    assert cpu.half_width_avx512 and cpu.peak_macs() == 64 * 2000.0e6
    assert cpu.peak_macs("avx2") == 32 * 2000.0e6
